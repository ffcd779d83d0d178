package synchronizer

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// jsonSize bounds the length of a value's JSON, as encoding/json writes it
// (and storage stores it), without encoding it: a walk of the value that
// counts its strings' bytes and the punctuation around them. least is
// what the JSON takes if nothing is escaped, about the bytes the value
// holds; most is what it takes if every byte of every string is (\u00XX,
// six bytes) and every number is as long as a float64 gets.
type jsonSize struct{ least, most int }

// maxNumberJSON is the longest a float64 or int64 encodes to: a sign, 17
// significant digits and a decimal point or exponent.
const maxNumberJSON = 25

func (s *jsonSize) add(least, most int) {
	s.least += least
	s.most += most
}

// punctuate adds the brackets of n elements and the commas between them.
func (s *jsonSize) punctuate(n int) {
	p := 2 + max(n-1, 0)
	s.add(p, p)
}

// sizeOf measures v, a value of an Unstructured's content.
func sizeOf(v any) jsonSize {
	var s jsonSize
	s.measure(v)
	return s
}

func (s *jsonSize) measure(v any) {
	switch v := v.(type) {
	case map[string]any:
		s.punctuate(len(v))
		for k, e := range v {
			s.add(len(k)+3, 6*len(k)+3) // quotes and colon
			s.measure(e)
		}
	case []any:
		s.punctuate(len(v))
		for _, e := range v {
			s.measure(e)
		}
	case string:
		s.add(len(v)+2, 6*len(v)+2)
	case int64, float64:
		s.add(1, maxNumberJSON)
	case bool:
		s.add(4, 5)
	case nil:
		s.add(4, 4)
	default: // not what decoding makes: measured exactly
		data, _ := json.Marshal(v)
		s.add(len(data), len(data))
	}
}

// fits reports whether the JSON of u, whose size is size, takes at most
// limit bytes with its final newline. It encodes u only when the bounds
// leave that open: objects of ordinary size never are.
func fits(u *unstructured.Unstructured, size jsonSize, limit int) bool {
	switch {
	case size.most < limit:
		return true
	case size.least >= limit:
		return false
	}
	data, err := u.MarshalJSON()
	return err == nil && len(data) <= limit
}
