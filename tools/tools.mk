# Pinned developer tools, built from Go modules into $(ROOT)/bin (gitignored).
# Included by the top-level GNUmakefile:
#
#   include tools/tools.mk
#
# Each tool has its own module in tools/NAME (never in the provider's go.mod);
# bumping a version = `cd tools/NAME && go get -tool MODULE@VERSION`, which
# touches go.mod/go.sum and so rebuilds bin/NAME on the next make.
#
#   make tools              build all seven (cold, 2 cores: ~25 min in all, tofu
#                           ~10 min, terraform ~5 min; warm: under 40 s)
#   make bin/terraform      build one
#
# Targets are relative to the top-level directory (where the GNUmakefile
# runs); TOOLS_BIN is the absolute directory, for env vars such as
# TF_ACC_TERRAFORM_PATH=$(TOOLS_BIN)/terraform.

ROOT ?= $(CURDIR)
TOOLS_BIN := $(abspath $(ROOT))/bin
TOOLS_DIR := $(abspath $(ROOT))/tools
TOOLS := terraform terraform1.5 tofu tfplugindocs golangci-lint helm helm3

bin/terraform: $(TOOLS_DIR)/terraform/go.mod $(TOOLS_DIR)/terraform/go.sum \
	$(shell find '$(TOOLS_DIR)/terraform/stubs' -type f)
bin/terraform1.5: $(TOOLS_DIR)/terraform1.5/go.mod $(TOOLS_DIR)/terraform1.5/go.sum
bin/tofu: $(TOOLS_DIR)/tofu/go.mod $(TOOLS_DIR)/tofu/go.sum
bin/tfplugindocs: $(TOOLS_DIR)/tfplugindocs/go.mod $(TOOLS_DIR)/tfplugindocs/go.sum
bin/golangci-lint: $(TOOLS_DIR)/golangci-lint/go.mod $(TOOLS_DIR)/golangci-lint/go.sum
bin/helm: $(TOOLS_DIR)/helm/go.mod $(TOOLS_DIR)/helm/go.sum
bin/helm3: $(TOOLS_DIR)/helm3/go.mod $(TOOLS_DIR)/helm3/go.sum

# build-tool.sh repeats make's freshness check (bin/NAME newer than go.mod,
# go.sum and, for terraform, the stubs), so calling it directly is cheap too:
# `tools/build-tool.sh tofu`.
$(addprefix bin/,$(TOOLS)):
	@ROOT='$(abspath $(ROOT))' $(if $(GO),GO='$(GO)') '$(TOOLS_DIR)/build-tool.sh' $(notdir $@)

.PHONY: tools
tools: $(addprefix bin/,$(TOOLS))
