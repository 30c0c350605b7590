package main

import (
	"browserfl/internal/loadtest"
	"context"
)

// teacher calls the teacher endpoint POST /api/teacher/action with the
// load test's teacher secret.
func teacher(ctx context.Context, base, action string) error {
	return loadtest.Teacher(ctx, base, teacherSecret, action)
}
