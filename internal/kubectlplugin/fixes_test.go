package kubectlplugin

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/panorama-io/panorama/internal/viewclient"
)

// A view's columns are a member CRD's printer columns: their names reach
// the terminal escaped, as the cells do.
func TestColumnNamesAreEscaped(t *testing.T) {
	table := serverTable(t)
	table.ColumnDefinitions[2].Name = "Status\x1b]0;owned\x07\x1b[2J\u009b31m\n"
	got := printed(t, table, false)
	if strings.ContainsAny(got, "\x1b\x07\u009b") || strings.Count(got, "\n") != 3 {
		t.Errorf("a column's name printed raw terminal escapes: %q", got)
	}
	if !strings.Contains(got, "STATUS^[]0;OWNED?^[[2J?31M?") {
		t.Errorf("the column's name is not printed escaped: %q", got)
	}
}

// numbered is n lines "line i: prefix i".
func numbered(n int, prefix func(i int) string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d: %s\n", i, prefix(i))
	}
	return b.String()
}

func TestDiffOfLongVersionsIsDifflibsOwn(t *testing.T) {
	a := numbered(400, func(int) string { return "same" })
	b := numbered(400, func(i int) string {
		if i == 50 || i == 52 || i == 300 {
			return "changed"
		}
		return "same"
	})
	var got bytes.Buffer
	if err := writeDiff(&got, a, b, "a", "b"); !errors.Is(err, errDiffers) {
		t.Fatal(err)
	}
	want, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: lines(a), B: lines(b), FromFile: "a", ToFile: "b", Context: diffContext})
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != want || !strings.Contains(want, "@@ -48,") || !strings.Contains(want, "@@ -298,") {
		t.Errorf("the diff of the changed window\n%s\nis not difflib's of the whole versions\n%s", got.String(), want)
	}
}

func TestDiffOfTooManyChangesSaysSo(t *testing.T) {
	a := numbered(maxChangedLines, func(i int) string { return "a" })
	b := numbered(maxChangedLines, func(i int) string { return "b" })
	var out bytes.Buffer
	err := writeDiff(&out, a, b, "east:cm@1", "east:cm@2")
	if err == nil || !strings.Contains(err.Error(), "too many changes to show: east:cm@1 and east:cm@2 differ in 20000 lines") {
		t.Errorf("a diff of %d changed lines: %v", 2*maxChangedLines, err)
	}
	if out.Len() != 0 {
		t.Errorf("a refused diff printed %q", out.String())
	}
}

// An annotation may hold a C1 control (U+009B is a terminal's CSI) or DEL,
// which sigs.k8s.io/yaml's reader refuses: the YAML holds them escaped.
func TestYAMLOfControlCharacters(t *testing.T) {
	value := "a\u009b2Jb\u007fc\u0085d"
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	obj.SetName("web")
	obj.SetAnnotations(map[string]string{"note": value})

	cmd := &cobra.Command{}
	p := addPrintFlags(cmd, false)
	if err := cmd.Flags().Set("output", "yaml"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := p.printObject(obj, &out); err != nil {
		t.Fatalf("-o yaml: %v", err)
	}
	if strings.ContainsAny(out.String(), "\u009b\u007f") {
		t.Errorf("-o yaml printed the controls raw: %q", out.String())
	}
	var back map[string]any
	if err := yaml.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("reading back %q: %v", out.String(), err)
	}
	if got := back["metadata"].(map[string]any)["annotations"].(map[string]any)["note"]; got != value {
		t.Errorf("the annotation read back is %q, want %q", got, value)
	}
	if _, err := toYAML(obj.Object); err != nil {
		t.Errorf("the YAML a diff compares: %v", err)
	}
}

func TestErrorsPrintAsKubectls(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{viewclient.BadInput("name either a TYPE or a --collection"), "error: name either a TYPE or a --collection\n"},
		{fmt.Errorf("wrapped: %w", viewclient.BadInput("bad")), "error: bad\n"},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no")),
			`Error from server (Forbidden): pods is forbidden: no` + "\n"},
		{errors.New("error: already prefixed"), "error: already prefixed\n"},
	} {
		var out bytes.Buffer
		if code := Exit(&out, tc.err); out.String() != tc.want || code != 1 {
			t.Errorf("Exit(%v) = %d, printing %q, want 1, printing %q", tc.err, code, out.String(), tc.want)
		}
	}
	// diff's, as kubectl diff's: 1 when it found differences, 2 when it
	// failed.
	for _, tc := range []struct {
		err  error
		code int
		want string
	}{
		{errDiffers, 1, ""},
		{diffFailed{viewclient.BadInput("no versions")}, 2, "error: no versions\n"},
	} {
		var out bytes.Buffer
		if code := Exit(&out, tc.err); out.String() != tc.want || code != tc.code {
			t.Errorf("Exit(%v) = %d, printing %q, want %d, printing %q", tc.err, code, out.String(), tc.code, tc.want)
		}
	}
	// An InputError is still the BadRequest Status MCP answers with.
	if !apierrors.IsBadRequest(viewclient.BadInput("x")) {
		t.Error("BadInput is not a BadRequest")
	}
}
