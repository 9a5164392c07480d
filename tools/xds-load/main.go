// Command xds-load holds many simulated xDS clients (Envoy-like sidecars or proxyless gRPC
// clients) for bench/xds. It is driven over stdin/stdout with one JSON object per line, the
// commands and results of bench/xds/protocol.ts:
//
//	→ {"cmd":"start", ...}   ← {"ev":"initial","result":{...}}
//	→ {"cmd":"arm", ...}     ← {"ev":"armed"}
//	→ {"cmd":"measure", ...} ← {"ev":"edit","result":{...}}
//	→ {"cmd":"stop"}         ← {"ev":"stopped"}
//
// It prints {"ev":"loaded"} when ready and {"ev":"fatal","message":...} on a fatal error.
// Timestamps are CLOCK_MONOTONIC nanoseconds, the clock of Node's process.hrtime, so the runner's
// write time and the clients' ACK times compare across the two processes.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// now is CLOCK_MONOTONIC in nanoseconds.
func now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// cpuSeconds is this process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// ClientSpec is one simulated client, as the runner names it (bench/xds/naming.ts).
type ClientSpec struct {
	ID        string         `json:"id"`
	Cluster   string         `json:"cluster"`
	Metadata  map[string]any `json:"metadata"`
	UserAgent string         `json:"userAgent"`
	// Target is the listener a proxyless client dials (host:port).
	Target string `json:"target,omitempty"`
}

type command struct {
	Cmd string `json:"cmd"`
	// start
	Addr              string       `json:"addr"`
	Kind              string       `json:"kind"`
	Delta             bool         `json:"delta"`
	Clients           []ClientSpec `json:"clientSpecs"`
	StreamsPerChannel int          `json:"streamsPerChannel"`
	WindowBytes       int          `json:"windowBytes"`
	TimeoutMs         int          `json:"timeoutMs"`
	// arm
	Probe    probe `json:"probe"`
	Expected []int `json:"expected"`
	// measure
	WrittenAtNs string `json:"writtenAtNs"`
	QuietMs     int    `json:"quietMs"`
}

type probe struct {
	Type        string   `json:"type"`
	Key         string   `json:"key"`
	MustContain []string `json:"mustContain"`
}

type perType struct {
	CDS int64 `json:"cds"`
	EDS int64 `json:"eds"`
	LDS int64 `json:"lds"`
	RDS int64 `json:"rds"`
}

func perTypeOf(a *[numKinds]atomic.Int64) perType {
	return perType{a[cds].Load(), a[eds].Load(), a[lds].Load(), a[rds].Load()}
}

func perTypeOfInts(a [numKinds]int64) perType {
	return perType{a[cds], a[eds], a[lds], a[rds]}
}

type initialResult struct {
	Clients       int       `json:"clients"`
	Complete      int64     `json:"complete"`
	FailedStreams int64     `json:"failedStreams"`
	CompletionMs  []float64 `json:"completionMs"`
	WallMs        float64   `json:"wallMs"`
	OpenMs        float64   `json:"openMs"`
	Responses     perType   `json:"responses"`
	Bytes         perType   `json:"bytes"`
	DriverCPUS    float64   `json:"driverCpuS"`
	Decodes       int64     `json:"decodes"`
	MemoHits      int64     `json:"memoHits"`
	Errors        []string  `json:"errors"`
	TimedOut      bool      `json:"timedOut"`
	// name tables (mesh.v1.dns.NameTable) received and ACKed by clients with DNS_CAPTURE=true
	NameTables     int64 `json:"nameTables"`
	NameTableBytes int64 `json:"nameTableBytes"`
}

type editResult struct {
	Expected         int       `json:"expected"`
	LatenciesMs      []float64 `json:"latenciesMs"`
	GotAny           int       `json:"gotAny"`
	UnexpectedGotAny int       `json:"unexpectedGotAny"`
	Responses        perType   `json:"responses"`
	Bytes            perType   `json:"bytes"`
	ClientsByType    perType   `json:"clientsByType"`
	FirstResponseMs  *float64  `json:"firstResponseMs"`
	LastResponseMs   float64   `json:"lastResponseMs"`
	DriverCPUS       float64   `json:"driverCpuS"`
	TimedOut         bool      `json:"timedOut"`
	FailedStreams    int64     `json:"failedStreams"`
	NameTables       int64     `json:"nameTables"`
	NameTableBytes   int64     `json:"nameTableBytes"`
}

// window is what an edit window looks for and what it saw.
type window struct {
	mu            sync.Mutex
	probeKind     kind
	probe         probe
	expected      map[int]bool
	ackedAt       map[int]int64
	responses     [numKinds]int64
	bytes         [numKinds]int64
	clientsByType [numKinds]map[int]bool
	gotAny        map[int]bool
	first, last   int64
	cpuAtArm      float64
	// name tables received before the window opened
	ndsAtArm, ndsBytesAtArm int64
}

func (w *window) record(idx int, k kind, n int, at int64) {
	w.mu.Lock()
	w.responses[k]++
	w.bytes[k] += int64(n)
	w.clientsByType[k][idx] = true
	w.gotAny[idx] = true
	if w.first == 0 {
		w.first = at
	}
	w.last = at
	w.mu.Unlock()
}

func (w *window) checkProbe(idx int, k kind, info *listInfo, ackedAt int64) {
	if k != w.probeKind {
		return
	}
	sig, ok := info.signatures[w.probe.Key]
	if !ok {
		return
	}
	for _, s := range w.probe.MustContain {
		if !containsString(sig, s) {
			return
		}
	}
	w.mu.Lock()
	if _, done := w.ackedAt[idx]; !done {
		w.ackedAt[idx] = ackedAt
	}
	w.mu.Unlock()
}

func containsString(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

type driver struct {
	cfg            command
	memo           *memo
	clients        []*client
	conns          []*grpc.ClientConn
	ctx            context.Context
	cancel         context.CancelFunc
	responses      [numKinds]atomic.Int64
	bytes          [numKinds]atomic.Int64
	completeCount  atomic.Int64
	failedStreams  atomic.Int64
	ndsResponses   atomic.Int64
	ndsBytes       atomic.Int64
	lastResponseAt atomic.Int64
	window         atomic.Pointer[window]
	errMu          sync.Mutex
	errors         []string
}

func (d *driver) error(msg string) {
	d.errMu.Lock()
	if len(d.errors) < 10 {
		d.errors = append(d.errors, msg)
	}
	d.errMu.Unlock()
}

// encodeNode builds the Node message of a client.
func encodeNode(s ClientSpec) ([]byte, error) {
	md, err := structpb.NewStruct(s.Metadata)
	if err != nil {
		return nil, fmt.Errorf("node metadata of %s: %w", s.ID, err)
	}
	mdBytes, err := protoMarshal(md)
	if err != nil {
		return nil, err
	}
	var b []byte
	b = appendString(b, 1, s.ID)
	b = appendString(b, 2, s.Cluster)
	b = appendBytesField(b, 3, mdBytes)
	b = appendString(b, 6, s.UserAgent)
	b = appendString(b, 7, "0.0.0-bench")
	return b, nil
}

func (d *driver) open() (float64, error) {
	started := now()
	per := max(1, d.cfg.StreamsPerChannel)
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32), grpc.MaxCallSendMsgSize(math.MaxInt32)),
		// fewer read syscalls for responses of megabytes
		grpc.WithReadBufferSize(256 * 1024),
	}
	if d.cfg.WindowBytes > 0 {
		opts = append(opts, grpc.WithInitialWindowSize(int32(d.cfg.WindowBytes)), grpc.WithInitialConnWindowSize(int32(d.cfg.WindowBytes)))
	}
	opened := make(chan struct{}, len(d.cfg.Clients))
	for i, spec := range d.cfg.Clients {
		if i%per == 0 {
			conn, err := grpc.NewClient("passthrough:///"+d.cfg.Addr, opts...)
			if err != nil {
				return 0, err
			}
			d.conns = append(d.conns, conn)
		}
		node, err := encodeNode(spec)
		if err != nil {
			return 0, err
		}
		c := &client{d: d, idx: i, spec: spec, node: node}
		d.clients = append(d.clients, c)
		go c.run(d.ctx, d.conns[len(d.conns)-1], opened)
	}
	for range d.cfg.Clients {
		<-opened
	}
	return float64(now()-started) / 1e6, nil
}

func (d *driver) initial() (initialResult, error) {
	cpu0 := cpuSeconds()
	t0 := now()
	openMs, err := d.open()
	if err != nil {
		return initialResult{}, err
	}
	deadline := time.Now().Add(time.Duration(d.cfg.TimeoutMs) * time.Millisecond)
	timedOut := false
	for d.completeCount.Load()+d.failedStreams.Load() < int64(len(d.clients)) {
		if time.Now().After(deadline) {
			timedOut = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	wallMs := float64(now()-t0) / 1e6
	completion := []float64{}
	for _, c := range d.clients {
		if at := c.completedAt.Load(); at != 0 {
			completion = append(completion, float64(at-c.openedAt)/1e6)
		}
	}
	slices.Sort(completion)
	d.errMu.Lock()
	errs := append([]string{}, d.errors...)
	d.errMu.Unlock()
	d.memo.mu.Lock()
	decodes, hits := d.memo.decodes, d.memo.hits
	d.memo.mu.Unlock()
	return initialResult{
		Clients: len(d.clients), Complete: d.completeCount.Load(), FailedStreams: d.failedStreams.Load(),
		CompletionMs: completion, WallMs: wallMs, OpenMs: openMs,
		Responses: perTypeOf(&d.responses), Bytes: perTypeOf(&d.bytes),
		DriverCPUS: cpuSeconds() - cpu0, Decodes: decodes, MemoHits: hits, Errors: errs, TimedOut: timedOut,
		NameTables: d.ndsResponses.Load(), NameTableBytes: d.ndsBytes.Load(),
	}, nil
}

func (d *driver) arm(cmd command) error {
	k := -1
	for i, n := range kindNames {
		if n == cmd.Probe.Type {
			k = i
		}
	}
	if k < 0 {
		return fmt.Errorf("probe type %q", cmd.Probe.Type)
	}
	w := &window{probeKind: kind(k), probe: cmd.Probe, expected: map[int]bool{}, ackedAt: map[int]int64{}, gotAny: map[int]bool{}, cpuAtArm: cpuSeconds(), ndsAtArm: d.ndsResponses.Load(), ndsBytesAtArm: d.ndsBytes.Load()}
	for i := range w.clientsByType {
		w.clientsByType[i] = map[int]bool{}
	}
	for _, i := range cmd.Expected {
		if i >= 0 && i < len(d.clients) && d.clients[i].failed.Load() == nil {
			w.expected[i] = true
		}
	}
	d.window.Store(w)
	return nil
}

func (d *driver) measure(cmd command) (editResult, error) {
	w := d.window.Load()
	if w == nil {
		return editResult{}, fmt.Errorf("measure without arm")
	}
	written, err := strconv.ParseInt(cmd.WrittenAtNs, 10, 64)
	if err != nil {
		return editResult{}, fmt.Errorf("writtenAtNs: %w", err)
	}
	deadline := time.Now().Add(time.Duration(cmd.TimeoutMs) * time.Millisecond)
	timedOut := false
	allAcked := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := range w.expected {
			if _, ok := w.ackedAt[i]; !ok && d.clients[i].failed.Load() == nil {
				return false
			}
		}
		return true
	}
	for {
		last := d.lastResponseAt.Load()
		if last < written {
			last = written
		}
		quiet := float64(now()-last)/1e6 >= float64(cmd.QuietMs)
		if allAcked() && quiet {
			break
		}
		if time.Now().After(deadline) {
			timedOut = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.window.Store(nil)
	w.mu.Lock()
	defer w.mu.Unlock()
	lat := make([]float64, 0, len(w.ackedAt))
	for _, t := range w.ackedAt {
		lat = append(lat, float64(t-written)/1e6)
	}
	slices.Sort(lat)
	unexpected := 0
	for i := range w.gotAny {
		if !w.expected[i] {
			unexpected++
		}
	}
	var byType [numKinds]int64
	for i, m := range w.clientsByType {
		byType[i] = int64(len(m))
	}
	var first *float64
	if w.first > 0 {
		v := float64(w.first-written) / 1e6
		first = &v
	}
	last := 0.0
	if w.last > written {
		last = float64(w.last-written) / 1e6
	}
	return editResult{
		Expected: len(w.expected), LatenciesMs: lat, GotAny: len(w.gotAny), UnexpectedGotAny: unexpected,
		Responses: perTypeOfInts(w.responses), Bytes: perTypeOfInts(w.bytes), ClientsByType: perTypeOfInts(byType),
		FirstResponseMs: first, LastResponseMs: last, DriverCPUS: cpuSeconds() - w.cpuAtArm, TimedOut: timedOut,
		FailedStreams: d.failedStreams.Load(),
		NameTables:    d.ndsResponses.Load() - w.ndsAtArm, NameTableBytes: d.ndsBytes.Load() - w.ndsBytesAtArm,
	}, nil
}

func (d *driver) stop() {
	for _, c := range d.clients {
		c.closing.Store(true)
	}
	d.cancel()
	for _, c := range d.conns {
		_ = c.Close()
	}
}

var outMu sync.Mutex
var out = bufio.NewWriter(os.Stdout)

func emit(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"ev": "fatal", "message": err.Error()})
	}
	outMu.Lock()
	_, _ = out.Write(b)
	_ = out.WriteByte('\n')
	_ = out.Flush()
	outMu.Unlock()
}

func main() {
	// XDS_LOAD_CPUPROFILE=<file>: a Go CPU profile of the whole run (development of this tool)
	if path := os.Getenv("XDS_LOAD_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	var d *driver
	emit(map[string]string{"ev": "loaded"})
	fatal := func(err error) {
		emit(map[string]string{"ev": "fatal", "message": err.Error()})
		os.Exit(1)
	}
	for in.Scan() {
		var cmd command
		if err := json.Unmarshal(in.Bytes(), &cmd); err != nil {
			fatal(fmt.Errorf("command: %w", err))
		}
		switch cmd.Cmd {
		case "start":
			if cmd.Kind != "sidecar" && cmd.Kind != "grpc" {
				fatal(fmt.Errorf("kind must be sidecar or grpc, got %q", cmd.Kind))
			}
			ctx, cancel := context.WithCancel(context.Background())
			d = &driver{cfg: cmd, memo: newMemo(), ctx: ctx, cancel: cancel}
			res, err := d.initial()
			if err != nil {
				fatal(err)
			}
			emit(map[string]any{"ev": "initial", "result": res})
		case "arm":
			if d == nil {
				fatal(fmt.Errorf("arm before start"))
			}
			if err := d.arm(cmd); err != nil {
				fatal(err)
			}
			emit(map[string]string{"ev": "armed"})
		case "measure":
			if d == nil {
				fatal(fmt.Errorf("measure before start"))
			}
			res, err := d.measure(cmd)
			if err != nil {
				fatal(err)
			}
			emit(map[string]any{"ev": "edit", "result": res})
		case "stop":
			if d != nil {
				d.stop()
			}
			pprof.StopCPUProfile()
			emit(map[string]string{"ev": "stopped"})
			return
		default:
			fatal(fmt.Errorf("unknown command %q", cmd.Cmd))
		}
	}
	// stdin closed: the runner went away
	if d != nil {
		d.stop()
	}
}

func protoMarshal(m proto.Message) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(m)
}
