package kubectlplugin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/spf13/pflag"
)

// serverSearchParams are the names of the API server's table of search
// parameters (apiserver/params.go searchParams), read from its source:
// the table is the server's alone, and this keeps the flags from drifting
// from it.
func serverSearchParams(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../../apiserver/params.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != "searchParams" {
			return true
		}
		for _, elt := range spec.Values[0].(*ast.CompositeLit).Elts {
			for _, field := range elt.(*ast.CompositeLit).Elts {
				kv, ok := field.(*ast.KeyValueExpr)
				if !ok || kv.Key.(*ast.Ident).Name != "name" {
					continue
				}
				name, err := strconv.Unquote(kv.Value.(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				names = append(names, name)
			}
		}
		return false
	})
	if len(names) < 10 {
		t.Fatalf("read only %v from apiserver/params.go's searchParams", names)
	}
	return names
}

func TestEverySearchParameterHasAFlag(t *testing.T) {
	var ours []string
	for _, f := range searchFlags {
		ours = append(ours, f.param)
		if !f.search && !f.count {
			t.Errorf("the flag of %s is on no command", f.param)
		}
	}
	if server := serverSearchParams(t); !slices.Equal(ours, server) {
		t.Errorf("the plugin's search flags are of %v, the server's parameters are %v", ours, server)
	}
}

func TestSearchQuery(t *testing.T) {
	fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
	s := addSearchFlags(fs, false)
	if err := fs.Parse([]string{"-l", "app=web", "--field-selector", "status.phase=Running",
		"--clusters", "east,west", "--clusters", "north", "--fuzzy-name", "we", "--images", "nginx",
		"--owner-name", "web", "--owner-gr", "deployments.apps", "--owner-seniority", "1",
		"--since", "2026-01-01", "--before", "2026-02-01", "--order-by", "name desc", "--as-of", "1h",
		"--namespaces", "shop", "--names", "a,b", "--keywords", "db.example,web*", "--keywords", "EAST"}); err != nil {
		t.Fatal(err)
	}
	want := url.Values{
		"labelSelector": {"app=web"}, "fieldSelector": {"status.phase=Running"},
		"clusters": {"east,west,north"}, "fuzzyName": {"we"}, "images": {"nginx"},
		"ownerName": {"web"}, "ownerGR": {"deployments.apps"}, "ownerSeniority": {"1"},
		"since": {"2026-01-01"}, "before": {"2026-02-01"}, "orderby": {"name desc"}, "asOf": {"1h"},
		"namespaces": {"shop"}, "names": {"a,b"}, "q": {"db.example,web*,EAST"},
	}
	if got := s.query(); !reflect.DeepEqual(got, want) {
		t.Errorf("query\n got %v\nwant %v", got, want)
	}
	// Unset flags send nothing: the server's defaults hold.
	if got := addSearchFlags(pflag.NewFlagSet("search", pflag.ContinueOnError), false).query(); len(got) != 0 {
		t.Errorf("no flags sent %v", got)
	}
}

// TestBooleanFlags: a boolean parameter's flag is true alone, as
// kubectl's are, false when it says so, and refuses what is neither.
func TestBooleanFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want url.Values
	}{
		{[]string{"--with-remaining-count", "--only-metadata=false"}, url.Values{"withRemainingCount": {"true"}, "onlyMetadata": {"false"}}},
		{[]string{"--with-remaining-count=1", "--only-metadata=F"}, url.Values{"withRemainingCount": {"true"}, "onlyMetadata": {"false"}}},
	} {
		fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
		s := addSearchFlags(fs, false)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := s.query(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: query %v, want %v", tc.args, got, tc.want)
		}
	}
	fs := pflag.NewFlagSet("count", pflag.ContinueOnError)
	c := addSearchFlags(fs, true)
	if err := fs.Parse([]string{"--with-held-since", "pods"}); err != nil || !reflect.DeepEqual(c.query(), url.Values{"withHeldSince": {"true"}}) || !slices.Equal(fs.Args(), []string{"pods"}) {
		t.Errorf("--with-held-since pods: %v, query %v, args %v", err, c.query(), fs.Args())
	}
	if err := fs.Parse([]string{"--with-held-since=maybe"}); err == nil {
		t.Error("--with-held-since=maybe was taken")
	}
}

func TestCountTakesGroupByNotAsOf(t *testing.T) {
	cmd := newCountCommand(&options{})
	if cmd.Flags().Lookup("group-by") == nil || cmd.Flags().Lookup("as-of") != nil {
		t.Error("count must take --group-by and not --as-of, which the server refuses on counts")
	}
	if newSearchCommand(&options{}).Flags().Lookup("group-by") != nil {
		t.Error("search must not take --group-by: that is count")
	}
}
