package ui

//go:generate go run github.com/vugu/vugu/cmd/vugugen -skip-go-mod -skip-main .
//go:generate go fmt .
