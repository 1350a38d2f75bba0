package importmark

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// Source is a resource type of another provider whose objects a resource of this provider takes
// over with a `moved` block (Terraform 1.8+, OpenTofu): its provider ("hashicorp/helm", on any
// registry host), its type, and how the object's import ID is read from its state.
type Source struct {
	Provider string
	Type     string
	// ID returns the import ID of the object the source state (its JSON) describes.
	ID func(state map[string]any) (string, error)
}

// StateMovers returns one resource.StateMover per source. A move is an import of the ID the
// source's state names, through the resource's own ImportState: the object is marked imported,
// so the Read that follows adopts it from the cluster, as after an import block, it gets the
// identity ImportState sets (for a resource with one), and nothing is changed in the cluster by
// the move itself.
func StateMovers(r resource.ResourceWithImportState, sources ...Source) []resource.StateMover {
	movers := make([]resource.StateMover, 0, len(sources))
	for _, src := range sources {
		movers = append(movers, resource.StateMover{StateMover: func(ctx context.Context, req resource.MoveStateRequest, resp *resource.MoveStateResponse) {
			if req.SourceTypeName != src.Type || !strings.HasSuffix(req.SourceProviderAddress, "/"+src.Provider) {
				return // another source's: the next mover's
			}
			id, err := sourceID(req, src)
			if err != nil {
				resp.Diagnostics.AddError("Cannot move "+src.Type+" here", err.Error()+". "+importInstead(src.Type))
				return
			}
			imp := resource.ImportStateResponse{State: resp.TargetState, Private: resp.TargetPrivate, Identity: resp.TargetIdentity}
			r.ImportState(ctx, resource.ImportStateRequest{ID: id}, &imp)
			resp.Diagnostics.Append(imp.Diagnostics...)
			resp.TargetState, resp.TargetPrivate, resp.TargetIdentity = imp.State, imp.Private, imp.Identity
		}})
	}
	// Reached only when no source matched: say which sources there are and how to adopt others.
	names := make([]string, 0, len(sources))
	for _, src := range sources {
		names = append(names, src.Provider+"'s "+src.Type)
	}
	movers = append(movers, resource.StateMover{StateMover: func(_ context.Context, req resource.MoveStateRequest, resp *resource.MoveStateResponse) {
		resp.Diagnostics.AddError("Cannot move "+req.SourceTypeName+" here",
			fmt.Sprintf("A moved block cannot bring %s (%s) here: this resource takes over only %s. %s",
				req.SourceTypeName, req.SourceProviderAddress, strings.Join(names, " and "), importInstead(req.SourceTypeName)))
	}})
	return movers
}

func importInstead(typ string) string {
	return "Import the object instead: remove the " + typ + " from Terraform's state without destroying it (a `removed` block with " +
		"`lifecycle { destroy = false }`) and add an `import` block for it."
}

func sourceID(req resource.MoveStateRequest, src Source) (string, error) {
	if req.SourceRawState == nil || len(req.SourceRawState.JSON) == 0 {
		return "", fmt.Errorf("the state of %s (%s) holds no attributes", src.Type, req.SourceProviderAddress)
	}
	var state map[string]any
	if err := json.Unmarshal(req.SourceRawState.JSON, &state); err != nil {
		return "", fmt.Errorf("the state of %s (%s) cannot be read: %w", src.Type, req.SourceProviderAddress, err)
	}
	return src.ID(state)
}

// StringAt returns the non-empty string at a path of a source's state, where a path element is
// an attribute name or, for a block Terraform's SDKv2 stores as a list (hashicorp/kubernetes's
// `metadata`), the list's first element: StringAt(s, "metadata", "name").
func StringAt(state map[string]any, path ...string) (string, error) {
	var cur any = state
	for _, p := range path {
		if list, ok := cur.([]any); ok {
			if len(list) == 0 {
				return "", fmt.Errorf("%s is empty in the source's state", strings.Join(path, "."))
			}
			cur = list[0]
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return "", fmt.Errorf("no %s in the source's state", strings.Join(path, "."))
		}
		cur = m[p]
	}
	s, ok := cur.(string)
	if !ok || s == "" {
		return "", fmt.Errorf("no %s in the source's state", strings.Join(path, "."))
	}
	return s, nil
}
