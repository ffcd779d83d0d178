package mcpserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/watch"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// memberResourceVersionAnnotation is where Panorama keeps the member's
// resourceVersion of an object, which changes with every version and so
// says nothing of what changed.
const memberResourceVersionAnnotation = "panorama.io/member-resource-version"

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
			v.Changed = changedPaths(patch)
		}
		if withPatches && patch != nil {
			v.Patch = patch
		}
		out = append(out, v)
	}
	return out, nil
}

// changedPaths are the dotted paths of the leaves of a merge patch, sorted,
// leaving out the bookkeeping every version changes (resourceVersion, the
// member's resourceVersion, managedFields).
func changedPaths(patch map[string]any) []string {
	var paths []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, val := range m {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			if isBookkeeping(p) {
				continue
			}
			if sub, ok := val.(map[string]any); ok && len(sub) > 0 {
				walk(p, sub)
				continue
			}
			paths = append(paths, p)
		}
	}
	walk("", patch)
	sort.Strings(paths)
	return paths
}

func isBookkeeping(path string) bool {
	return path == "metadata.resourceVersion" || path == "metadata.managedFields" ||
		path == "metadata.annotations."+memberResourceVersionAnnotation
}

// versionAt is the object as it was at revision: the state after the last
// change at or before it, nil when it did not exist then. The History's
// patches are applied in order: ADDED is the whole object, MODIFIED a
// merge patch, DELETED nothing.
func versionAt(h *searchv1alpha1.History, revision int64) ([]byte, error) {
	var state []byte
	for _, it := range h.Items {
		if it.Revision > revision {
			break
		}
		switch it.Type {
		case watch.Added:
			state = slices.Clone(it.Patch)
		case watch.Deleted:
			state = nil
		default:
			if state == nil {
				return nil, fmt.Errorf("revision %d modifies an object the history does not hold before it", it.Revision)
			}
			var err error
			if state, err = jsonpatch.MergePatch(state, it.Patch); err != nil {
				return nil, fmt.Errorf("applying the patch of revision %d: %w", it.Revision, err)
			}
		}
	}
	return state, nil
}

// diff is the JSON merge patch from the object at revision from to the
// object at revision to, without the bookkeeping, and the paths it changes.
func diff(h *searchv1alpha1.History, from, to int64) (map[string]any, []string, error) {
	a, err := versionAt(h, from)
	if err != nil {
		return nil, nil, err
	}
	b, err := versionAt(h, to)
	if err != nil {
		return nil, nil, err
	}
	if a == nil || b == nil {
		missing := from
		if a != nil {
			missing = to
		}
		return nil, nil, badInput(fmt.Sprintf("the object did not exist at revision %d (its revisions: %s)", missing, revisions(h)))
	}
	patch, err := jsonpatch.CreateMergePatch(a, b)
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, nil, err
	}
	dropBookkeeping(m)
	return m, changedPaths(m), nil
}

// dropBookkeeping removes what isBookkeeping names from a merge patch,
// and the maps it leaves empty.
func dropBookkeeping(patch map[string]any) {
	md, ok := patch["metadata"].(map[string]any)
	if !ok {
		return
	}
	delete(md, "resourceVersion")
	delete(md, "managedFields")
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, memberResourceVersionAnnotation)
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	if len(md) == 0 {
		delete(patch, "metadata")
	}
}

func revisions(h *searchv1alpha1.History) string {
	rs := make([]string, len(h.Items))
	for i, it := range h.Items {
		rs[i] = fmt.Sprintf("%d %s", it.Revision, it.Type)
	}
	return strings.Join(rs, ", ")
}
