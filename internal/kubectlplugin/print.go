package kubectlplugin

import (
	"encoding/json"
	"io"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes/scheme"
)

// printFlags are kubectl get's output flags: -o and the table's own.
type printFlags struct {
	*genericclioptions.PrintFlags
	noHeaders    bool
	showLabels   bool
	labelColumns []string
}

func addPrintFlags(cmd *cobra.Command, table bool) *printFlags {
	p := &printFlags{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)}
	p.AddFlags(cmd)
	formats := "One of: (" + strings.Join(append([]string{"wide"}, p.AllowedFormats()...), ", ") + ")."
	cmd.Flags().Lookup("output").Usage = "Output format. " + formats
	cmd.Flags().BoolVar(&p.noHeaders, "no-headers", false, "When using the default or custom-column output format, don't print headers (default print headers).")
	if table {
		cmd.Flags().BoolVar(&p.showLabels, "show-labels", false, "When printing, show all labels as the last column (default hide labels column)")
		cmd.Flags().StringSliceVarP(&p.labelColumns, "label-columns", "L", nil, "Accepts a comma separated list of labels that are going to be presented as columns.")
	}
	return p
}

// humanReadable reports whether -o asks for a table (none, or wide).
func (p *printFlags) humanReadable() bool {
	o := *p.OutputFormat
	return o == "" || o == "wide"
}

// printTable prints a Table as kubectl get does, its rows' objects
// decoded so the printer finds their namespaces and labels.
func (p *printFlags) printTable(t *metav1.Table, withNamespace bool, out io.Writer) error {
	for i := range t.Rows {
		raw := t.Rows[i].Object.Raw
		if raw == nil {
			continue
		}
		var u unstructured.Unstructured
		if err := json.Unmarshal(raw, &u.Object); err != nil {
			return err
		}
		t.Rows[i].Object.Object = &u
	}
	// The printer escapes cells but writes the columns' names as they
	// are, and a view's columns are a member CRD's printer columns: a
	// member could write terminal escapes into the user's terminal.
	for i := range t.ColumnDefinitions {
		t.ColumnDefinitions[i].Name = escapeColumnName(t.ColumnDefinitions[i].Name)
	}
	printer := printers.NewTablePrinter(printers.PrintOptions{
		NoHeaders:     p.noHeaders,
		Wide:          *p.OutputFormat == "wide",
		WithNamespace: withNamespace,
		ShowLabels:    p.showLabels,
		ColumnLabels:  p.labelColumns,
	})
	return printer.PrintObj(t, out)
}

// escapeColumnName escapes a column's name as the printer escapes cells,
// and replaces the controls that escaping leaves (BEL, line breaks, the C1
// controls some terminals act on as ESC sequences): a name has no use for
// them.
func escapeColumnName(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, printers.EscapeTerminal(name))
}

// printObject prints obj with -o's printer (json, yaml, name, jsonpath,
// go-template).
func (p *printFlags) printObject(obj runtime.Object, out io.Writer) error {
	if *p.OutputFormat == "yaml" {
		// cli-runtime's YAML printer fails on a string holding a C1
		// control; toYAML escapes it.
		y, err := toYAML(obj)
		if err != nil {
			return err
		}
		_, err = io.WriteString(out, y)
		return err
	}
	printer, err := p.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(obj, out)
}

// asUnstructured decodes an answer of the views for a printer.
func asUnstructured(body []byte) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	return u, json.Unmarshal(body, &u.Object)
}
