module browserfl

go 1.26.8
