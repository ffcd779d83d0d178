package kubectlplugin

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kubectl/pkg/cmd/get"
)

// printFlags are kubectl get's output flags: -o and the table's own.
// kubectl's own printers make every -o but wide: cli-runtime's, and
// kubectl get's for custom columns.
type printFlags struct {
	*genericclioptions.PrintFlags
	customColumns get.CustomColumnsPrintFlags
	noHeaders     bool
	showLabels    bool
	labelColumns  []string
}

func addPrintFlags(cmd *cobra.Command, table bool) *printFlags {
	p := &printFlags{PrintFlags: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)}
	p.AddFlags(cmd)
	formats := "One of: (" + strings.Join(p.allowedFormats(), ", ") + ")."
	cmd.Flags().Lookup("output").Usage = "Output format. " + formats
	cmd.Flags().BoolVar(&p.noHeaders, "no-headers", false, "When using the default or custom-column output format, don't print headers (default print headers).")
	if table {
		cmd.Flags().BoolVar(&p.showLabels, "show-labels", false, "When printing, show all labels as the last column (default hide labels column)")
		cmd.Flags().StringSliceVarP(&p.labelColumns, "label-columns", "L", nil, "Accepts a comma separated list of labels that are going to be presented as columns.")
	}
	return p
}

func (p *printFlags) allowedFormats() []string {
	return slices.Concat([]string{"wide"}, p.AllowedFormats(), p.customColumns.AllowedFormats())
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
		if err := utiljson.Unmarshal(raw, &u.Object); err != nil {
			return err
		}
		t.Rows[i].Object.Object = &u
	}
	// The printer escapes cells but writes the columns' names as they
	// are, and a view's columns are a member CRD's printer columns: a
	// member could write terminal escapes into the user's terminal.
	for i := range t.ColumnDefinitions {
		t.ColumnDefinitions[i].Name = printable(t.ColumnDefinitions[i].Name)
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

// printable escapes a string of a column as the table printer escapes
// cells, and replaces the controls that escaping leaves (BEL, line breaks,
// the C1 controls some terminals act on as ESC sequences): a column has no
// use for them, and a line break would forge a row.
func printable(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, printers.EscapeTerminal(name))
}

// printObject prints obj with -o's printer (json, yaml, name, jsonpath,
// go-template, custom-columns).
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
	printer, err := p.toPrinter()
	if err != nil {
		return err
	}
	if _, columns := printer.(*get.CustomColumnsPrinter); columns {
		// Its cells are the members' strings, which its own escaping
		// leaves line breaks and most controls of; and it finds a list's
		// items in a typed list only (Counts, History: decoded whole).
		content, ok := obj.(runtime.Unstructured)
		if !ok {
			return fmt.Errorf("custom columns of %T", obj)
		}
		u := &unstructured.Unstructured{Object: printableStrings(content.UnstructuredContent()).(map[string]any)}
		if u.IsList() {
			if obj, err = u.ToList(); err != nil {
				return err
			}
		} else {
			obj = u
		}
	}
	return printer.PrintObj(obj, out)
}

// printableStrings is a copy of a JSON value with every string printable.
func printableStrings(v any) any {
	switch v := v.(type) {
	case string:
		return printable(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[printable(k)] = printableStrings(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = printableStrings(e)
		}
		return out
	default:
		return v
	}
}

// toPrinter is -o's printer, as kubectl get picks it: a file of custom
// columns may be given by --template, as kubectl's --template is.
func (p *printFlags) toPrinter() (printers.ResourcePrinter, error) {
	printer, err := p.ToPrinter()
	if !genericclioptions.IsNoCompatiblePrinterError(err) {
		return printer, err
	}
	p.customColumns.NoHeaders = p.noHeaders
	if p.TemplatePrinterFlags.TemplateArgument != nil {
		p.customColumns.TemplateArgument = *p.TemplatePrinterFlags.TemplateArgument
	}
	printer, err = p.customColumns.ToPrinter(*p.OutputFormat)
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		format := *p.OutputFormat
		return nil, genericclioptions.NoCompatiblePrinterError{OutputFormat: &format, AllowedFormats: p.allowedFormats()}
	}
	return printer, err
}

// asUnstructured decodes an answer of the views for a printer, whole
// numbers as integers, as kubectl decodes them: -o jsonpath would print a
// float64 count of 1234567 as 1.234567e+06.
func asUnstructured(body []byte) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	return u, utiljson.Unmarshal(body, &u.Object)
}
