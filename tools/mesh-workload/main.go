// Command mesh-workload plays a workload against mesh-discovery's secured port (:15012) with
// grpc-go: it asks the certificate service for a certificate (`cert`), or opens an ADS stream over
// mutual TLS and receives its configuration (`xds`). It prints one JSON report on stdout.
//
//	mesh-workload cert -addr 127.0.0.1:15012 -server-name meshd.mesh-system.svc -root root.pem \
//	    (-token-file token | -cert cert.pem -key key.pem) [-identity spiffe://...] [-key-type ec|rsa] \
//	    [-ttl 1h] -out-cert chain.pem -out-key key.pem
//	mesh-workload xds -addr 127.0.0.1:15012 -server-name meshd.mesh-system.svc -root root.pem \
//	    [-cert cert.pem -key key.pem] [-token-file token] -node-id 'sidecar~10.0.0.1~pod.ns~ns.svc.cluster.local'
//
// Exit status: 0 success; 1 the server refused (the report names the gRPC code); 2 bad flags or
// a local failure.
package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	createCertificate = "/mesh.v1.auth.MeshCertificateService/CreateCertificate"
	typeCluster       = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	typeListener      = "type.googleapis.com/envoy.config.listener.v3.Listener"
)

type report struct {
	OK        bool           `json:"ok"`
	Code      string         `json:"code,omitempty"`
	Message   string         `json:"message,omitempty"`
	Chain     int            `json:"chain,omitempty"`
	Resources map[string]int `json:"resources,omitempty"`
	LatencyMs float64        `json:"latencyMs,omitempty"`
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "cert" && os.Args[1] != "xds") {
		fmt.Fprintln(os.Stderr, "usage: mesh-workload cert|xds [flags]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:15012", "secured port of mesh-discovery")
	serverName := fs.String("server-name", "meshd.mesh-system.svc", "name the server certificate must carry")
	root := fs.String("root", "", "PEM roots that the server certificate must chain to (required)")
	tokenFile := fs.String("token-file", "", "service-account token sent as authorization: Bearer")
	certFile := fs.String("cert", "", "client certificate chain (PEM)")
	keyFile := fs.String("key", "", "client key (PEM)")
	identity := fs.String("identity", "", "cert: SPIFFE URI the CSR asks for (default: none)")
	keyType := fs.String("key-type", "ec", "cert: ec (P-256) or rsa (2048)")
	ttl := fs.Duration("ttl", 0, "cert: requested lifetime (0: the server's default)")
	outCert := fs.String("out-cert", "", "cert: where to write the returned chain")
	outKey := fs.String("out-key", "", "cert: where to write the new key")
	nodeID := fs.String("node-id", "", "xds: node id")
	namespace := fs.String("namespace", "", "xds: NAMESPACE node metadata (default: from the node id)")
	timeout := fs.Duration("timeout", 15*time.Second, "give up after this long")
	hold := fs.Duration("hold", 0, "xds: keep the stream open this long after the configuration arrived")
	plaintext := fs.Bool("plaintext", false, "xds: connect without TLS (the plaintext port, with XDS_AUTH_PLAINTEXT)")
	_ = fs.Parse(os.Args[2:])
	if *root == "" && !*plaintext {
		fail(2, "-root is required")
	}

	var creds credentials.TransportCredentials
	var err error
	if *plaintext {
		creds = insecure.NewCredentials()
	} else if creds, err = transport(*root, *serverName, *certFile, *keyFile); err != nil {
		fail(2, err.Error())
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		fail(2, err.Error())
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *tokenFile != "" {
		tok, err := os.ReadFile(*tokenFile)
		if err != nil {
			fail(2, err.Error())
		}
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}

	started := time.Now()
	var r report
	if mode == "cert" {
		r, err = cert(ctx, conn, *identity, *keyType, *ttl, *outCert, *outKey)
	} else {
		if *nodeID == "" {
			fail(2, "-node-id is required")
		}
		r, err = xds(ctx, conn, *nodeID, *namespace, *hold)
	}
	r.LatencyMs = float64(time.Since(started).Microseconds()) / 1000
	if err != nil {
		if s, ok := status.FromError(err); ok {
			r.Code = s.Code().String()
			r.Message = s.Message()
		} else {
			r.Code = "LOCAL"
			r.Message = err.Error()
		}
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
	if !r.OK {
		os.Exit(1)
	}
}

func fail(code int, msg string) {
	out, _ := json.Marshal(report{Code: "LOCAL", Message: msg})
	fmt.Println(string(out))
	os.Exit(code)
}

func transport(rootFile, serverName, certFile, keyFile string) (credentials.TransportCredentials, error) {
	pemRoots, err := os.ReadFile(rootFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemRoots) {
		return nil, fmt.Errorf("%s: no certificate", rootFile)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12}
	if certFile != "" || keyFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return credentials.NewTLS(cfg), nil
}

// rawCodec sends and receives messages already encoded (the certificate service's two small
// messages are encoded here with protowire).
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

func cert(ctx context.Context, conn *grpc.ClientConn, identity, keyType string, ttl time.Duration, outCert, outKey string) (report, error) {
	var key crypto.Signer
	var err error
	if keyType == "rsa" {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		return report{}, err
	}
	tmpl := &x509.CertificateRequest{}
	if identity != "" {
		u, err := url.Parse(identity)
		if err != nil {
			return report{}, err
		}
		tmpl.URIs = []*url.URL{u}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		return report{}, err
	}
	csr := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	var req []byte
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendBytes(req, csr)
	if ttl > 0 {
		req = protowire.AppendTag(req, 2, protowire.VarintType)
		req = protowire.AppendVarint(req, uint64(ttl/time.Second))
	}
	var resp []byte
	if err := conn.Invoke(ctx, createCertificate, &req, &resp, grpc.ForceCodec(rawCodec{})); err != nil {
		return report{}, err
	}
	var chain []string
	for len(resp) > 0 {
		num, typ, n := protowire.ConsumeTag(resp)
		if n < 0 {
			return report{}, errors.New("bad response")
		}
		resp = resp[n:]
		if num == 1 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(resp)
			if m < 0 {
				return report{}, errors.New("bad response")
			}
			chain = append(chain, string(v))
			resp = resp[m:]
		} else {
			m := protowire.ConsumeFieldValue(num, typ, resp)
			if m < 0 {
				return report{}, errors.New("bad response")
			}
			resp = resp[m:]
		}
	}
	if outCert != "" {
		if err := os.WriteFile(outCert, []byte(strings.Join(chain, "")), 0o600); err != nil {
			return report{}, err
		}
	}
	if outKey != "" {
		pk, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return report{}, err
		}
		if err := os.WriteFile(outKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
			return report{}, err
		}
	}
	return report{OK: true, Chain: len(chain)}, nil
}

func xds(ctx context.Context, conn *grpc.ClientConn, nodeID, namespace string, hold time.Duration) (report, error) {
	if namespace == "" {
		parts := strings.Split(nodeID, "~")
		if len(parts) == 4 {
			if dot := strings.LastIndex(parts[2], "."); dot >= 0 {
				namespace = parts[2][dot+1:]
			}
		}
	}
	meta, _ := structpb.NewStruct(map[string]any{"NAMESPACE": namespace, "CLUSTER_ID": "Cluster"})
	node := &corev3.Node{Id: nodeID, Metadata: meta}
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return report{}, err
	}
	counts := map[string]int{}
	for _, typ := range []string{typeCluster, typeListener} {
		if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typ}); err != nil {
			return report{}, err
		}
		resp, err := stream.Recv()
		if err != nil {
			return report{}, err
		}
		counts[resp.TypeUrl] = len(resp.Resources)
		if err := stream.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: resp.TypeUrl, VersionInfo: resp.VersionInfo, ResponseNonce: resp.Nonce}); err != nil {
			return report{}, err
		}
	}
	if hold > 0 {
		// Tell whoever waits that the stream is up, then keep it open.
		fmt.Fprintln(os.Stderr, "mesh-workload: configuration received; holding the stream")
		select {
		case <-time.After(hold):
		case <-ctx.Done():
		}
	}
	_ = stream.CloseSend()
	short := map[string]int{"clusters": counts[typeCluster], "listeners": counts[typeListener]}
	return report{OK: counts[typeCluster] > 0, Resources: short}, nil
}
