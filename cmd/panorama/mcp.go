package main

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/panorama-io/panorama/internal/mcpserver"
)

// mcpPath is where --http serves the MCP endpoint.
const mcpPath = "/mcp"

// mcpCommand is `panorama mcp`: an MCP server for AI agents over
// Panorama's views, acting with the credentials of the kubeconfig it runs
// with, on standard input and output (the default) or streamable HTTP.
func mcpCommand(ctx context.Context, args []string, stderr io.Writer) error {
	fs := pflag.NewFlagSet("panorama mcp", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	fs.StringVar(&rules.ExplicitPath, "kubeconfig", "", "Kubeconfig of the host (default: $KUBECONFIG, else ~/.kube/config).")
	contextName := fs.String("context", "", "Context of the host whose server and user the server acts with (default: the current one).")
	clusters := fs.StringSlice("clusters", nil, "Clusters to offer when the user may not list the host's Clusters.")
	addr := fs.String("http", "", "Serve streamable HTTP on this address (a bare :PORT binds to 127.0.0.1) at "+mcpPath+", instead of standard input and output.")
	tokenFile := fs.String("http-token-file", "", "File holding the bearer token HTTP callers must send (default: a random token, printed on standard error).")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: panorama mcp [flags]\n\nServes MCP tools over Panorama's views (clusters, search, count, get, history, describe) with your own host credentials.\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tokenFile != "" && *addr == "" {
		return errors.New("--http-token-file needs --http")
	}
	host, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: *contextName}).ClientConfig()
	if err != nil {
		return err
	}
	server, err := mcpserver.New(host, mcpserver.Options{Clusters: *clusters})
	if err != nil {
		return err
	}
	if *addr == "" {
		return server.Run(ctx, &mcp.StdioTransport{})
	}
	token, err := httpToken(*tokenFile)
	if err != nil {
		return err
	}
	return serveMCPHTTP(ctx, server, loopbackByDefault(*addr), token, *tokenFile == "", stderr)
}

// loopbackByDefault binds a bare :PORT to 127.0.0.1: the server reads
// with its user's credentials, which a listener on every interface would
// lend to the network.
func loopbackByDefault(addr string) string {
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// httpToken is the bearer token of HTTP callers: the file's first line,
// else a random one.
func httpToken(file string) (string, error) {
	if file == "" {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return "", err
		}
		return hex.EncodeToString(b), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	// A caller's header is split at white space: a token with any could
	// never match.
	token := strings.TrimSpace(line)
	if token == "" || strings.ContainsFunc(token, unicode.IsSpace) {
		return "", fmt.Errorf("%s holds no token: its first line must be one word", file)
	}
	return token, nil
}

// serveMCPHTTP serves server as streamable HTTP on addr to callers that
// send token, until ctx ends. Without it a caller gets 401: whoever
// reaches the port would otherwise read with the kubeconfig's user.
func serveMCPHTTP(ctx context.Context, server *mcp.Server, addr, token string, printToken bool, stderr io.Writer) error {
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{}, nil
	}
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	mux := http.NewServeMux()
	mux.Handle(mcpPath, auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(handler))

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "serving MCP at http://%s%s\n", ln.Addr(), mcpPath)
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		fmt.Fprintf(stderr, "warning: plain HTTP beyond this machine: the bearer token and every answer cross the network unencrypted; put TLS in front\n")
	}
	if printToken {
		fmt.Fprintf(stderr, "bearer token: %s\n", token)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
