package viewclient

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/watch"

	searchv1alpha1 "github.com/panorama-io/panorama/apis/search/v1alpha1"
)

// VersionAt is the object as it was at revision: the state after the last
// change at or before it, nil when it did not exist then. The History's
// patches are applied in order: ADDED is the whole object, MODIFIED a
// merge patch, DELETED nothing; a first MODIFIED item, whose previous
// version the answer leaves out, carries the whole object. Before a first
// item that is not ADDED the object existed, as the history does not say.
func VersionAt(h *searchv1alpha1.History, revision int64) ([]byte, error) {
	if len(h.Items) > 0 && revision < h.Items[0].Revision && h.Items[0].Type != watch.Added {
		return nil, fmt.Errorf("the history kept begins at revision %d, after %d", h.Items[0].Revision, revision)
	}
	var state []byte
	for _, it := range h.Items {
		if it.Revision > revision {
			break
		}
		switch {
		case it.Type == watch.Added:
			state = slices.Clone(it.Patch)
		case it.Type == watch.Deleted:
			state = nil
		case it.Object != nil:
			state = slices.Clone(it.Object)
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

// ChangedPaths are the dotted paths of the leaves of a merge patch,
// sorted, leaving out the bookkeeping every version changes
// (resourceVersion, the member's resourceVersion, managedFields).
func ChangedPaths(patch map[string]any) []string {
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
		path == "metadata.annotations."+MemberResourceVersionAnnotation
}

// DropBookkeeping removes what every version changes (resourceVersion,
// managedFields, the member's resourceVersion) from an object or a merge
// patch, and the maps it leaves empty.
func DropBookkeeping(obj map[string]any) {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	delete(md, "resourceVersion")
	delete(md, "managedFields")
	if ann, ok := md["annotations"].(map[string]any); ok {
		delete(ann, MemberResourceVersionAnnotation)
		if len(ann) == 0 {
			delete(md, "annotations")
		}
	}
	if len(md) == 0 {
		delete(obj, "metadata")
	}
}

// Revisions lists a History's revisions and types, for messages.
func Revisions(h *searchv1alpha1.History) string {
	rs := make([]string, len(h.Items))
	for i, it := range h.Items {
		rs[i] = fmt.Sprintf("%d %s", it.Revision, it.Type)
	}
	return strings.Join(rs, ", ")
}
