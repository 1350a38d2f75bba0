package schemacheck

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// example is a resource with a plain and a nested attribute; attrs changes its schema.
type example struct {
	attrs func(map[string]schema.Attribute)
}

func (e example) Metadata(context.Context, resource.MetadataRequest, *resource.MetadataResponse) {}
func (e example) Create(context.Context, resource.CreateRequest, *resource.CreateResponse)       {}
func (e example) Read(context.Context, resource.ReadRequest, *resource.ReadResponse)             {}
func (e example) Update(context.Context, resource.UpdateRequest, *resource.UpdateResponse)       {}
func (e example) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse)       {}
func (e example) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	attrs := map[string]schema.Attribute{
		"name": schema.StringAttribute{Required: true},
		"rule": schema.ListNestedAttribute{Optional: true, NestedObject: schema.NestedAttributeObject{
			Attributes: map[string]schema.Attribute{"key": schema.StringAttribute{Required: true}},
		}},
	}
	if e.attrs != nil {
		e.attrs(attrs)
	}
	resp.Schema = schema.Schema{Attributes: attrs}
}

type ruleModel struct {
	Key types.String `tfsdk:"key"`
}

type goodModel struct {
	Name  types.String `tfsdk:"name"`
	Rules []ruleModel  `tfsdk:"rule"`
}

// recorder is a testing.TB that keeps the failures; Fatalf ends the goroutine as testing does.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(r)
}

func run(t *testing.T, check func(testing.TB)) []string {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		check(r)
	}()
	return r.errors
}

func TestResource(t *testing.T) {
	type wrongNested struct {
		Name  types.String `tfsdk:"name"`
		Rules []struct {
			Value types.String `tfsdk:"value"`
		} `tfsdk:"rule"`
	}
	type missing struct {
		Name types.String `tfsdk:"name"`
	}
	type extra struct {
		goodModel
		Old types.String `tfsdk:"old_name"`
	}
	type wrongType struct {
		Name  types.Int64 `tfsdk:"name"`
		Rules []ruleModel `tfsdk:"rule"`
	}
	tests := []struct {
		name  string
		r     example
		model any
		want  []string
	}{
		{name: "matches", model: goodModel{}},
		{name: "embedded struct", model: struct{ goodModel }{}},
		{name: "attribute without field", model: missing{}, want: []string{`attribute rule has no field with tag`}},
		{name: "tag without attribute", model: extra{}, want: []string{`has tag ` + "`tfsdk:\"old_name\"`" + `, but the schema has no attribute old_name`}},
		{name: "nested", model: wrongNested{}, want: []string{`attribute rule.key has no field`, `the schema has no attribute rule.value`}},
		{name: "type", model: wrongType{}, want: []string{`reading a value into`}},
		{name: "implementation", model: goodModel{}, r: example{attrs: func(a map[string]schema.Attribute) {
			a["name"] = schema.StringAttribute{Required: true, Default: stringdefault.StaticString("x")}
		}}, want: []string{`implementation validation`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, func(tb testing.TB) { Resource(tb, tt.r, tt.model) })
			if len(tt.want) == 0 && len(got) > 0 {
				t.Fatalf("unexpected failures: %q", got)
			}
			all := strings.Join(got, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("failures %q do not say %q", got, w)
				}
			}
		})
	}
}
