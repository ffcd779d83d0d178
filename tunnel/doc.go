// Package tunnel carries the controller manager's requests to members it
// cannot dial: an agent in the member opens a WebSocket to the hub's
// tunnel endpoint, and the hub runs yamux over it, opening one stream per
// connection its member clients make. The agent serves each stream as an
// HTTP connection to its own API server (package agent), so the hub's
// clients speak to the member as they would directly, with the agent's
// credentials, never the hub's.
//
// The agent authenticates with a host ServiceAccount token for Audience;
// the ServiceAccount, in the controller manager's namespace, names in its
// annotation clusterv1alpha1.AnnotationAgentCluster the one Cluster whose
// tunnel it opens (ServiceAccounts). Who may write ServiceAccounts there
// binds agents to Clusters, as who may write Secrets there binds member
// credentials: creating a Cluster grants neither.
package tunnel
