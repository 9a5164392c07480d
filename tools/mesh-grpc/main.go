// Command mesh-grpc is a proxyless gRPC workload built with grpc-go's xDS support, for the tests of
// the security policy mesh-discovery serves to proxyless clients (docs/adr/0103). Its xDS bootstrap
// comes from GRPC_XDS_BOOTSTRAP_CONFIG (or GRPC_XDS_BOOTSTRAP), written by the caller: the node,
// the xDS server, `server_listener_resource_name_template` and `certificate_providers` (file
// watchers over certificate files).
//
//	mesh-grpc server -listen 127.0.0.1:8080 -name echo
//	    xds.NewGRPCServer with xDS server credentials (plaintext fallback) serving
//	    grpc.testing.TestService; prints "serving" / "not serving: <why>" lines on stderr.
//	mesh-grpc client -target xds:///echo.default.svc.cluster.local:8080 [-creds xds|insecure]
//	    one channel kept open; reads one method per stdin line (empty | unary) and answers each
//	    with one JSON line {"ok":true,"server":"echo"} or {"ok":false,"code":"Unavailable","message":"…"}.
//
// `-creds insecure` with a plain `host:port` target is a plaintext client outside the mesh.
// Exit status 2 for bad flags or a local failure.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	xdscreds "google.golang.org/grpc/credentials/xds"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "server" && os.Args[1] != "client") {
		fmt.Fprintln(os.Stderr, "usage: mesh-grpc server|client [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "server":
		runServer(os.Args[2:])
	case "client":
		runClient(os.Args[2:])
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "mesh-grpc: "+format+"\n", args...)
	os.Exit(2)
}

// testService answers EmptyCall and UnaryCall; UnaryCall names the server and the caller's transport.
type testService struct {
	testgrpc.UnimplementedTestServiceServer
	name string
}

func (s *testService) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (s *testService) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	security := "none"
	if p, ok := peer.FromContext(ctx); ok && p.AuthInfo != nil {
		security = p.AuthInfo.AuthType()
	}
	return &testgrpc.SimpleResponse{Hostname: s.name, ServerId: security}, nil
}

func runServer(args []string) {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	name := fs.String("name", "server", "name reported in UnaryCall responses")
	_ = fs.Parse(args)

	creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		fail("server credentials: %v", err)
	}
	modeChange := xds.ServingModeCallback(func(addr net.Addr, a xds.ServingModeChangeArgs) {
		if a.Err != nil {
			fmt.Fprintf(os.Stderr, "not serving %s: %v\n", addr, a.Err)
			return
		}
		fmt.Fprintf(os.Stderr, "%s %s\n", a.Mode, addr)
	})
	srv, err := xds.NewGRPCServer(grpc.Creds(creds), modeChange)
	if err != nil {
		fail("xds server: %v", err)
	}
	testgrpc.RegisterTestServiceServer(srv, &testService{name: *name})
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fail("listen %s: %v", *listen, err)
	}
	fmt.Fprintf(os.Stderr, "listening %s\n", lis.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		srv.Stop()
	}()
	if err := srv.Serve(lis); err != nil {
		fail("serve: %v", err)
	}
}

type answer struct {
	OK       bool   `json:"ok"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
	Server   string `json:"server,omitempty"`
	Security string `json:"security,omitempty"`
}

func runClient(args []string) {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	target := fs.String("target", "", "xds:///host:port, or host:port with -creds insecure")
	credsKind := fs.String("creds", "xds", "xds (security from the control plane, plaintext fallback) or insecure")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline of each call")
	_ = fs.Parse(args)
	if *target == "" {
		fail("-target is required")
	}
	var creds credentials.TransportCredentials
	switch *credsKind {
	case "xds":
		c, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
		if err != nil {
			fail("client credentials: %v", err)
		}
		creds = c
	case "insecure":
		creds = insecure.NewCredentials()
	default:
		fail("-creds %q: want xds or insecure", *credsKind)
	}
	conn, err := grpc.NewClient(*target, grpc.WithTransportCredentials(creds))
	if err != nil {
		fail("channel %s: %v", *target, err)
	}
	defer conn.Close()
	client := testgrpc.NewTestServiceClient(conn)
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		method := strings.TrimSpace(in.Text())
		if method == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		var a answer
		switch method {
		case "empty":
			_, err = client.EmptyCall(ctx, &testgrpc.Empty{})
		case "unary":
			var r *testgrpc.SimpleResponse
			r, err = client.UnaryCall(ctx, &testgrpc.SimpleRequest{})
			if err == nil {
				a.Server, a.Security = r.GetHostname(), r.GetServerId()
			}
		default:
			err = fmt.Errorf("unknown method %q (want empty or unary)", method)
		}
		cancel()
		if err != nil {
			st := status.Convert(err)
			a.Code, a.Message = st.Code().String(), st.Message()
		} else {
			a.OK = true
		}
		_ = out.Encode(a)
	}
}
