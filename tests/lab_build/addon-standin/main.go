// Command addon-standin is the lab's ADD-ON STAND-IN, ufcctl's own: one small program installed in the
// lab's images of the add-ons ufcctl applies (Calico, NodeLocal DNS and its autoscaler, Volcano,
// MindCluster, the NFS provisioner), whose real images cannot be pulled here. It does none of the
// add-on's work: it lets the add-on's Pods start, stay up and pass their probes, and nothing else.
//
// What it does comes from the JSON file baked into each image (/etc/ufcctl-addon-standin.json; the
// UFCCTL_ADDON_STANDIN_CONFIG environment variable names another, for tests) and from how it was called
// (argv[0], the path the container or the probe ran):
//   - a path listed in "oneshot" (an init container's command) exits 0 at once;
//   - a path in "probes" is an exec probe (with one of its flags, when the path also runs the main
//     process): it exits 0 when this container's main process is up, 1 when not;
//   - a path in "main" (an entrypoint, a command) is the main process: it holds a lock file, listens
//     on every port in "listen" (HTTP 200 on any path; HTTPS with a certificate made at start; gRPC's
//     health check answering SERVING) and runs until SIGTERM or SIGINT, then exits 0;
//   - a path in "shells" (/bin/bash -c -- SCRIPT) is the main process when SCRIPT names a program of
//     "shell_mains", else a one-shot; the script is never run.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	defaultConfig = "/etc/ufcctl-addon-standin.json"
	configEnv     = "UFCCTL_ADDON_STANDIN_CONFIG"
)

// Listen is one port a probe of the add-on's manifest names.
type Listen struct {
	Host   string `json:"host"` // "" every address, "localhost", or an IP (bound even when not local yet)
	Port   int    `json:"port"`
	Scheme string `json:"scheme"` // HTTP, HTTPS or GRPC
}

// Config is the image's /etc/ufcctl-addon-standin.json.
type Config struct {
	Image      string              `json:"image"`       // the upstream reference the image stands in for
	Name       string              `json:"name"`        // names the lock file
	Main       []string            `json:"main"`        // paths that run the main process
	Oneshot    []string            `json:"oneshot"`     // paths that exit 0 at once
	Probes     map[string][]string `json:"probes"`      // exec probe path -> its flags (none: always a probe)
	Shells     []string            `json:"shells"`      // shells the manifests call with -c
	ShellMains []string            `json:"shell_mains"` // programs whose naming in a -c script makes it main
	Listen     []Listen            `json:"listen"`
	LockDirs   []string            `json:"lock_dirs"` // where the main process may hold its lock
}

var defaultLockDirs = []string{"/dev/shm", "/run", "/tmp"}

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	file := os.Getenv(configEnv)
	if file == "" {
		file = defaultConfig
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ufcctl add-on stand-in: %v\n", err)
		return 2
	}
	var cfg Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "ufcctl add-on stand-in: %s: %v\n", file, err)
		return 2
	}
	if len(cfg.LockDirs) == 0 {
		cfg.LockDirs = defaultLockDirs
	}
	switch role := cfg.role(args[0], args[1:]); role {
	case "oneshot":
		fmt.Fprintf(os.Stderr, "ufcctl add-on stand-in for %s: %s is a one-shot here: exit 0, nothing done\n",
			cfg.Image, args[0])
		return 0
	case "probe":
		if up, where := cfg.mainUp(); up {
			return 0
		} else {
			fmt.Fprintf(os.Stderr, "ufcctl add-on stand-in for %s: main process not running (no lock held in %s)\n",
				cfg.Image, where)
			return 1
		}
	case "main":
		return cfg.serve(args)
	default:
		fmt.Fprintf(os.Stderr, "ufcctl add-on stand-in for %s: %s is not a path of %s\n", cfg.Image, args[0], file)
		return 2
	}
}

// matches says whether the called path is one of paths: exactly, or by name when called through PATH or a relative path.
func matches(called string, paths []string) bool {
	for _, p := range paths {
		if called == p || (!strings.HasPrefix(called, "/") && path.Base(p) == path.Base(called)) {
			return true
		}
	}
	return false
}

func (c *Config) role(called string, args []string) string {
	for p, flags := range c.Probes {
		if !matches(called, []string{p}) {
			continue
		}
		if len(flags) == 0 || slices.ContainsFunc(args, func(a string) bool { return slices.Contains(flags, a) }) {
			return "probe"
		}
	}
	if matches(called, c.Shells) {
		if c.shellRunsMain(args) {
			return "main"
		}
		return "oneshot"
	}
	if matches(called, c.Main) {
		return "main"
	}
	if matches(called, c.Oneshot) {
		return "oneshot"
	}
	return ""
}

// shellRunsMain reads `-c [--] SCRIPT` and says whether SCRIPT names one of the main programs.
func (c *Config) shellRunsMain(args []string) bool {
	for i, a := range args {
		if a != "-c" {
			continue
		}
		rest := args[i+1:]
		if len(rest) > 0 && rest[0] == "--" {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return false
		}
		words := strings.FieldsFunc(rest[0], func(r rune) bool { return strings.ContainsRune(" \t\n;&|()", r) })
		for _, w := range words {
			if slices.Contains(c.ShellMains, path.Base(w)) {
				return true
			}
		}
		return false
	}
	return false
}

func (c *Config) lockName() string {
	name := c.Name
	if name == "" {
		name = "main"
	}
	return "ufcctl-addon-standin-" + name + ".lock"
}

// mainUp: a lock file of this image whose flock another process holds.
func (c *Config) mainUp() (bool, string) {
	for _, dir := range c.LockDirs {
		f, err := os.Open(path.Join(dir, c.lockName()))
		if err != nil {
			continue
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return true, dir
		}
	}
	return false, strings.Join(c.LockDirs, ", ")
}

// holdLock takes the lock in the first directory where it can; nil when none (a read-only container
// with no /dev/shm): the process runs, its exec probes fail.
func (c *Config) holdLock() *os.File {
	for _, dir := range c.LockDirs {
		f, err := os.OpenFile(path.Join(dir, c.lockName()), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			continue
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		_ = f.Truncate(0)
		_, _ = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
		return f
	}
	return nil
}

func (c *Config) serve(args []string) int {
	fmt.Fprintf(os.Stderr, "ufcctl add-on stand-in for %s (lab only, does none of its work): %s\n",
		c.Image, strings.Join(args, " "))
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	lock := c.holdLock()
	if lock == nil {
		fmt.Fprintf(os.Stderr, "no lock file could be held in %s: exec probes will fail\n", strings.Join(c.LockDirs, ", "))
	}
	var servers []*http.Server
	for _, l := range c.Listen {
		started, err := listen(l, c.Image)
		if err != nil {
			fmt.Fprintf(os.Stderr, "listen %s:%d (%s): %v\n", l.Host, l.Port, l.Scheme, err)
			return 1
		}
		servers = append(servers, started...)
	}
	sig := <-signals
	fmt.Fprintf(os.Stderr, "ufcctl add-on stand-in for %s: exit on %v\n", c.Image, sig)
	for _, s := range servers {
		_ = s.Close()
	}
	if lock != nil {
		_ = os.Remove(lock.Name())
		lock.Close()
	}
	return 0
}

func addresses(host string) []string {
	switch host {
	case "":
		return []string{""}
	case "localhost":
		return []string{"127.0.0.1", "::1"}
	}
	return []string{host}
}

func listen(l Listen, image string) ([]*http.Server, error) {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			grpcServing(w)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "ok: ufcctl lab add-on stand-in for %s, not the add-on\n", image)
	})
	var tlsConfig *tls.Config
	scheme := strings.ToUpper(l.Scheme)
	if scheme == "HTTPS" {
		cert, err := selfSigned()
		if err != nil {
			return nil, err
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	} else if scheme != "" && scheme != "HTTP" && scheme != "GRPC" {
		return nil, fmt.Errorf("scheme %q: HTTP, HTTPS or GRPC", l.Scheme)
	}
	var servers []*http.Server
	for i, host := range addresses(l.Host) {
		lc := net.ListenConfig{Control: func(network, address string, conn syscall.RawConn) error {
			var sockErr error
			err := conn.Control(func(fd uintptr) {
				// an address the node will get later (NodeLocal DNS's link-local one): bind it anyway
				sockErr = syscall.SetsockoptInt(int(fd), syscall.SOL_IP, syscall.IP_FREEBIND, 1)
				if network == "tcp6" {
					sockErr = nil
				}
			})
			if err != nil {
				return err
			}
			return sockErr
		}}
		ln, err := lc.Listen(nil, "tcp", net.JoinHostPort(host, strconv.Itoa(l.Port)))
		if err != nil {
			if i > 0 { // ::1 of localhost: a node without IPv6 has none
				continue
			}
			return nil, err
		}
		s := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConfig}
		if scheme == "GRPC" {
			s.Protocols = new(http.Protocols)
			s.Protocols.SetHTTP1(true)
			s.Protocols.SetUnencryptedHTTP2(true)
		}
		if tlsConfig != nil {
			go s.ServeTLS(ln, "", "")
		} else {
			go s.Serve(ln)
		}
		fmt.Fprintf(os.Stderr, "listening on %s (%s)\n", ln.Addr(), strings.ToLower(scheme))
		servers = append(servers, s)
	}
	return servers, nil
}

// grpcServing answers any gRPC call, the kubelet's grpc.health.v1.Health/Check included, with a
// HealthCheckResponse{status: SERVING}: protobuf field 1, varint 1.
func grpcServing(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
	w.WriteHeader(http.StatusOK)
	message := []byte{0x08, 0x01}
	frame := make([]byte, 5, 5+len(message))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(message)))
	_, _ = w.Write(append(frame, message...))
	w.Header().Set("Grpc-Status", "0")
	w.Header().Set("Grpc-Message", "")
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "ufcctl lab add-on stand-in"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
