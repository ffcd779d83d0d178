package storage

import (
	"encoding/base64"
	"encoding/json"
)

// continueToken has apimachinery's shape (v, rv, start); start carries the
// last object's ordering values, so the next page is a keyset seek rather
// than an OFFSET that skips or repeats rows when others change.
type continueToken struct {
	APIVersion string `json:"v"`
	Revision   int64  `json:"rv"`
	Start      string `json:"start"`
}

// cursor is the position after the last object of a page.
type cursor struct {
	Order     string `json:"o"`
	Cluster   string `json:"c"`
	Namespace string `json:"ns"`
	Name      string `json:"n"`
	CreatedAt int64  `json:"t"`
}

const tokenAPIVersion = "meta.k8s.io/v1"

// EncodeContinue makes the token that resumes a list after last.
func EncodeContinue(revision int64, order []OrderBy, last *Object) string {
	start, _ := json.Marshal(cursor{
		Order: orderString(order), Cluster: last.Cluster, Namespace: last.Namespace,
		Name: last.Name, CreatedAt: last.CreatedAt,
	})
	tok, _ := json.Marshal(continueToken{APIVersion: tokenAPIVersion, Revision: revision, Start: string(start)})
	return base64.RawURLEncoding.EncodeToString(tok)
}

// DecodeContinue validates a token against the query's order. It returns the
// revision the list is pinned to and the last object's ordering values.
func DecodeContinue(token string, order []OrderBy) (int64, *Object, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		// apimachinery encodes with padding; accept both.
		if raw, err = base64.URLEncoding.DecodeString(token); err != nil {
			return 0, nil, Invalid("continue", "not a valid continue token")
		}
	}
	var tok continueToken
	if err := json.Unmarshal(raw, &tok); err != nil || tok.APIVersion != tokenAPIVersion {
		return 0, nil, Invalid("continue", "not a valid continue token")
	}
	if tok.Revision <= 0 {
		return 0, nil, Invalid("continue", "continue token has no resource version")
	}
	var c cursor
	if err := json.Unmarshal([]byte(tok.Start), &c); err != nil || c.Name == "" ||
		!StorableText(c.Cluster) || !StorableText(c.Namespace) || !StorableText(c.Name) {
		return 0, nil, Invalid("continue", "not a valid continue token")
	}
	if c.Order != orderString(order) {
		return 0, nil, Invalid("continue", "continue token was made for orderby %q", c.Order)
	}
	return tok.Revision, &Object{Key: Key{Cluster: c.Cluster, Namespace: c.Namespace, Name: c.Name}, CreatedAt: c.CreatedAt}, nil
}
