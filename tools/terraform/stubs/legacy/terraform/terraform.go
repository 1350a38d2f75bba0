// Package terraform stands in for Terraform's internal/legacy/terraform, which only a test of
// Terraform imports (tools/terraform/README.md); it is empty, so `go mod tidy` finds the package.
package terraform
