module github.com/hashicorp/terraform/internal/backend/remote-state/azure

go 1.25.10
