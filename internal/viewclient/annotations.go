package viewclient

// Annotations Panorama sets on every object of its views. They are the
// storage package's; a client of the views spells them here rather than
// linking the server.
const (
	// ClusterAnnotation names the member cluster an object is of.
	ClusterAnnotation = "panorama.io/cluster"
	// MemberResourceVersionAnnotation is where Panorama keeps the member's
	// resourceVersion of an object, which changes with every version and
	// so says nothing of what changed.
	MemberResourceVersionAnnotation = "panorama.io/member-resource-version"
)
