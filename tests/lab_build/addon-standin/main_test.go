package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// The kubelet's grpc probe: grpc.health.v1.Health/Check over plaintext HTTP/2 must answer SERVING.
func TestGRPCHealthCheckAnswersServing(t *testing.T) {
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	probe.Close()
	servers, err := listen(Listen{Host: "127.0.0.1", Port: port, Scheme: "GRPC"}, "test/image:v1")
	if err != nil {
		t.Fatal(err)
	}
	defer servers[0].Close()
	client := &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}}
	client.Transport.(*http.Transport).Protocols.SetUnencryptedHTTP2(true)
	request := []byte{0, 0, 0, 0, 0} // an empty HealthCheckRequest
	resp, err := client.Post("http://127.0.0.1:"+strconv.Itoa(port)+"/grpc.health.v1.Health/Check",
		"application/grpc", bytes.NewReader(request))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || !bytes.Equal(body, []byte{0, 0, 0, 0, 2, 0x08, 0x01}) {
		t.Fatalf("HTTP/%d body %v", resp.ProtoMajor, body)
	}
	if resp.Trailer.Get("Grpc-Status") != "0" {
		t.Fatalf("grpc-status %q", resp.Trailer.Get("Grpc-Status"))
	}
}

func TestRoles(t *testing.T) {
	c := &Config{
		Main: []string{"/bin/calico-node"}, Oneshot: []string{"/opt/cni/bin/install"},
		Probes: map[string][]string{"/bin/calico-node": {"-felix-live"}, "/usr/bin/check-status": {}},
		Shells: []string{"/bin/bash"}, ShellMains: []string{"clusterd"},
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"/bin/calico-node"}, "main"},
		{[]string{"/bin/calico-node", "-felix-live"}, "probe"},
		{[]string{"/usr/bin/check-status", "-r"}, "probe"},
		{[]string{"/opt/cni/bin/install"}, "oneshot"},
		{[]string{"/bin/bash", "-c", "--", "/usr/local/bin/clusterd -logFile=x"}, "main"},
		{[]string{"/bin/bash", "-c", "umask 027 && clusterd"}, "main"},
		{[]string{"/bin/bash", "-c", "mkdir -p /x"}, "oneshot"},
		{[]string{"calico-node"}, "main"},
		{[]string{"/usr/bin/other"}, ""},
	} {
		if got := c.role(tc.args[0], tc.args[1:]); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}
