package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// List reads every _test.go file below dir and returns the tests of each set (by the name of its
// acctest constant: EveryCLI, OldestTerraform, FirstCLIOnly), sorted, or every misplaced or
// malformed declaration found as one error.
func List(dir string) (map[string][]string, error) {
	placed := map[string][]string{}
	var problems []error
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := f.Name.Name == "acctest" // the harness's own tests call RunsUnder unqualified
		top := map[ast.Node]string{}      // declarations at the top of a test -> the test
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil || len(fn.Body.List) == 0 {
				continue
			}
			if stmt, ok := fn.Body.List[0].(*ast.ExprStmt); ok {
				if call, ok := stmt.X.(*ast.CallExpr); ok && isRunsUnder(call, local) {
					top[call] = fn.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isRunsUnder(call, local) {
				return true
			}
			pos := fset.Position(call.Pos())
			test, ok := top[call]
			if !ok {
				problems = append(problems, fmt.Errorf("%s: acctest.RunsUnder is not the first statement of a Test function", pos))
				return true
			}
			if !strings.HasPrefix(test, "TestAcc") {
				problems = append(problems, fmt.Errorf("%s: %s declares CLIs but is not an acceptance test (TestAcc...)", pos, test))
				return true
			}
			sets, err := setsOf(call)
			if err != nil {
				problems = append(problems, fmt.Errorf("%s: %s: %w", pos, test, err))
				return true
			}
			for _, s := range sets {
				placed[s] = append(placed[s], test)
			}
			return true
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, v := range variables {
		if len(placed[v.set]) == 0 {
			problems = append(problems, fmt.Errorf("no test declares acctest.%s", v.set))
		}
		slices.Sort(placed[v.set])
		placed[v.set] = slices.Compact(placed[v.set])
	}
	return placed, errors.Join(problems...)
}

// isRunsUnder is whether call is acctest.RunsUnder(...) (RunsUnder(...) inside package acctest).
func isRunsUnder(call *ast.CallExpr, local bool) bool {
	switch fun := call.Fun.(type) {
	case *ast.SelectorExpr:
		x, ok := fun.X.(*ast.Ident)
		return ok && x.Name == "acctest" && fun.Sel.Name == "RunsUnder"
	case *ast.Ident:
		return local && fun.Name == "RunsUnder"
	}
	return false
}

// setsOf returns the sets a RunsUnder call names (after its testing.TB).
func setsOf(call *ast.CallExpr) ([]string, error) {
	if len(call.Args) < 2 {
		return nil, errors.New("acctest.RunsUnder names no set")
	}
	var sets []string
	for _, arg := range call.Args[1:] {
		name := ""
		switch a := arg.(type) {
		case *ast.SelectorExpr:
			name = a.Sel.Name
		case *ast.Ident:
			name = a.Name
		}
		if !slices.ContainsFunc(variables, func(v struct{ set, variable string }) bool { return v.set == name }) {
			return nil, fmt.Errorf("acctest.RunsUnder: %s is not a set (acctest.EveryCLI, acctest.OldestTerraform, acctest.FirstCLIOnly)", render(arg))
		}
		sets = append(sets, name)
	}
	if slices.Contains(sets, "FirstCLIOnly") && len(sets) > 1 {
		return nil, errors.New("acctest.RunsUnder: FirstCLIOnly goes with no other set")
	}
	return sets, nil
}

// render renders an argument for a message.
func render(e ast.Expr) string {
	switch a := e.(type) {
	case *ast.SelectorExpr:
		if x, ok := a.X.(*ast.Ident); ok {
			return x.Name + "." + a.Sel.Name
		}
	case *ast.Ident:
		return a.Name
	case *ast.BasicLit:
		return a.Value
	}
	return fmt.Sprintf("%T", e)
}
