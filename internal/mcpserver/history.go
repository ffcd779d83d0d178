package mcpserver

import (
	"encoding/json"
	"fmt"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/watch"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
	"github.com/panorama-io/panorama/internal/viewclient"
)

// version is one entry of an object's timeline as the history tool
// answers it: what changed, by path, rather than the whole patch.
type version struct {
	Revision              int64      `json:"revision"`
	Time                  *time.Time `json:"time,omitempty"`
	Type                  string     `json:"type"`
	MemberResourceVersion string     `json:"memberResourceVersion,omitempty"`
	// Changed are the paths the version set or removed (MODIFIED only).
	Changed []string `json:"changed,omitempty"`
	// Patch is the JSON merge patch from the version before, when asked.
	Patch any `json:"patch,omitempty"`
}

// timeline summarizes a History: every version with the paths it changed,
// and its patch too when withPatches.
func timeline(h *searchv1alpha1.History, withPatches bool) ([]version, error) {
	out := make([]version, 0, len(h.Items))
	for _, it := range h.Items {
		v := version{Revision: it.Revision, Type: string(it.Type), MemberResourceVersion: it.MemberResourceVersion}
		if it.Time != nil {
			t := it.Time.UTC()
			v.Time = &t
		}
		var patch map[string]any
		if err := json.Unmarshal(it.Patch, &patch); err != nil {
			return nil, fmt.Errorf("decoding the patch of revision %d: %w", it.Revision, err)
		}
		if it.Type == watch.Modified {
			v.Changed = viewclient.ChangedPaths(patch)
		}
		if withPatches && patch != nil {
			v.Patch = patch
		}
		out = append(out, v)
	}
	return out, nil
}

// diff is the JSON merge patch from the object at revision from to the
// object at revision to, without the bookkeeping, and the paths it changes.
func diff(h *searchv1alpha1.History, from, to int64) (map[string]any, []string, error) {
	a, err := viewclient.VersionAt(h, from)
	if err != nil {
		return nil, nil, err
	}
	b, err := viewclient.VersionAt(h, to)
	if err != nil {
		return nil, nil, err
	}
	if a == nil || b == nil {
		missing := from
		if a != nil {
			missing = to
		}
		return nil, nil, viewclient.BadInput(fmt.Sprintf("the object did not exist at revision %d (its revisions: %s)", missing, viewclient.Revisions(h)))
	}
	patch, err := jsonpatch.CreateMergePatch(a, b)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, nil, err
	}
	viewclient.DropBookkeeping(m)
	return m, viewclient.ChangedPaths(m), nil
}
