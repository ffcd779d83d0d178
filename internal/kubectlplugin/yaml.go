package kubectlplugin

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// toYAML is obj as YAML, as kubectl's -o yaml prints it, for any string an
// object may hold. sigs.k8s.io/yaml reads its own JSON back with a YAML
// parser that refuses controls a JSON string carries raw (DEL, the C1
// controls a member's annotation may hold) and folds a raw NEL as a line
// break: escaped in the JSON first, they reach YAML as the characters and
// print escaped, in double quotes.
func toYAML(obj any) (string, error) {
	j, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	y, err := yaml.JSONToYAML([]byte(escapeUnreadableByYAML(string(j))))
	return string(y), err
}

// escapeUnreadableByYAML escapes, as \uXXXX, the runes of JSON text that
// YAML's reader refuses (it takes tab, newline and carriage return, the
// printable ASCII and U+00A0 on, but not U+FFFE and U+FFFF) or reads as a
// line break (NEL; encoding/json escapes U+2028 and U+2029 itself). JSON
// holds such runes only in strings, where the escape is the same rune.
func escapeUnreadableByYAML(j string) string {
	unreadable := func(r rune) bool {
		return r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0xfffe || r == 0xffff
	}
	if !strings.ContainsFunc(j, unreadable) {
		return j
	}
	var b strings.Builder
	for _, r := range j {
		if unreadable(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
