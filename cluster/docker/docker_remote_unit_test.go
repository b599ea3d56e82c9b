package docker

import (
	"strings"
	"testing"
)

func TestRemoteDaemonByAddress(t *testing.T) {
	t.Setenv(envRemote, "")
	for addr, want := range map[string]bool{
		"unix:///var/run/docker.sock": false,
		"npipe:////./pipe/docker":     false,
		"tcp://127.0.0.1:2375":        true,
		"tcp://docker:2376":           true,
		"https://10.0.0.5:2376":       true,
	} {
		got, err := remoteDaemon(addr)
		if err != nil || got != want {
			t.Errorf("remoteDaemon(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	t.Setenv(envRemote, "1")
	if got, _ := remoteDaemon("unix:///var/run/docker.sock"); !got {
		t.Errorf("%s=1 does not force the remote design", envRemote)
	}
	t.Setenv(envRemote, "yes")
	if _, err := remoteDaemon("unix:///var/run/docker.sock"); err == nil || !strings.Contains(err.Error(), "allowed: 1") {
		t.Errorf("%s=yes: error %v, want one naming the allowed values", envRemote, err)
	}
}

func TestDaemonHostAndBind(t *testing.T) {
	t.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "")
	for addr, want := range map[string]string{
		"tcp://127.0.0.1:2375":        "127.0.0.1",
		"tcp://docker:2376":           "docker",
		"unix:///var/run/docker.sock": "127.0.0.1",
	} {
		if got, err := daemonHost(addr); err != nil || got != want {
			t.Errorf("daemonHost(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := daemonHost("tcp://:2375"); err == nil {
		t.Error("a tcp address without a host was accepted")
	}
	t.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "10.1.2.3")
	if got, _ := daemonHost("tcp://docker:2376"); got != "10.1.2.3" {
		t.Errorf("TESTCONTAINERS_HOST_OVERRIDE ignored: %q", got)
	}
	// Published ports bind to loopback only when the daemon is reached there.
	for host, want := range map[string]string{"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1", "docker": "invalid IP", "10.1.2.3": "invalid IP"} {
		if got := bindAddr(host).String(); got != want {
			t.Errorf("bindAddr(%q) = %s, want %s", host, got, want)
		}
	}
}

func TestDockerSupports(t *testing.T) {
	own := hostKernel()
	local := &Docker{image: "img", caps: dockerCaps{imageShim: true, kernel: own}}
	remote := &Docker{image: "img", caps: dockerCaps{imageShim: true, kernel: "other"}, remote: &dockerRemote{}}
	for _, f := range []string{"kill", "partition-peer", "pause-node", "clock-jump", "power-loss"} {
		if err := local.Supports(f); err != nil {
			t.Errorf("local daemon on this kernel: Supports(%s) = %v", f, err)
		}
		if err := remote.Supports(f); err != nil {
			t.Errorf("remote daemon: Supports(%s) = %v", f, err)
		}
	}
	refused := map[string]*Docker{
		"image without the shim":         {image: "img", caps: dockerCaps{kernel: own}},
		"local daemon on another kernel": {image: "img", caps: dockerCaps{imageShim: true, kernel: own + "-vm"}},
	}
	for why, d := range refused {
		for _, f := range []string{"clock-jump", "clock-drift", "power-loss"} {
			if err := d.Supports(f); err == nil || !strings.Contains(err.Error(), f) {
				t.Errorf("%s: Supports(%s) = %v, want a refusal naming the fault", why, f, err)
			}
		}
		if err := d.Supports("kill"); err != nil {
			t.Errorf("%s: Supports(kill) = %v", why, err)
		}
	}
	rootless := &Docker{image: "img", caps: dockerCaps{imageShim: true, rootless: true, cgroupV1: true}, remote: &dockerRemote{host: "docker"}}
	if err := rootless.Supports("power-loss"); err == nil || !strings.Contains(err.Error(), "cannot pause") {
		t.Errorf("rootless remote daemon on cgroup v1: Supports(power-loss) = %v, want a refusal", err)
	}
	if err := rootless.Supports("clock-jump"); err != nil {
		t.Errorf("rootless remote daemon on cgroup v1: Supports(clock-jump) = %v", err)
	}
}
