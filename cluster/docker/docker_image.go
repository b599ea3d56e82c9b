package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/client"
)

// DockerImage is the node image built offline by cluster/image/build.sh
// (see EnsureImage). LOCKFAULT_IMAGE overrides it, for the script too.
const DockerImage = "lockfault-node:7.0.15"

// Image labels (set by cluster/image/build.sh) the backend reads.
const (
	labelImageLayout    = "lockfault.layout"    // what goes in: imageLayout
	labelImageToxiproxy = "lockfault.toxiproxy" // "1": /usr/bin/toxiproxy-server
	labelImageNodectl   = "lockfault.nodectl"   // "1": /usr/bin/lockfault-nodectl
	imageLayout         = "2"
)

// EnsureImage builds the node image with cluster/image/build.sh (found from
// the module root) when it is missing from the daemon DOCKER_HOST names (the
// default socket if unset), or is out of date (see imageCurrent). The
// script's output goes to stderr.
func EnsureImage(ctx context.Context) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	return ensureImageOn(ctx, cli)
}

// ensureImageOn is EnsureImage on the daemon cli talks to: the docker CLI
// the script runs is pointed at it (a remote daemon builds the image from the
// context the CLI sends through its API).
func ensureImageOn(ctx context.Context, cli client.APIClient) error {
	img := dockerImage()
	ins, err := cli.ImageInspect(ctx, img)
	switch {
	case err == nil:
		if ins.Config != nil && imageCurrent(ins.Config.Labels) {
			return nil
		}
	case !cerrdefs.IsNotFound(err):
		return fmt.Errorf("docker: inspect image %s: %w", img, err)
	}
	script, err := buildScript()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "LOCKFAULT_IMAGE="+img, "DOCKER_HOST="+cli.DaemonHost())
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker: build image %s with %s on %s: %w", img, script, cli.DaemonHost(), err)
	}
	return nil
}

// imageCurrent reports whether an image with these labels needs no rebuild:
// it has the current layout, the clock shim if the host has built it, and
// toxiproxy-server and lockfault-nodectl if go can build them.
func imageCurrent(labels map[string]string) bool {
	if labels[labelImageLayout] != imageLayout {
		return false
	}
	if labels[labelImageShim] != "1" && hostShimBuilt() {
		return false
	}
	if labels[labelImageToxiproxy] != "1" || labels[labelImageNodectl] != "1" {
		_, err := exec.LookPath("go")
		return err != nil
	}
	return true
}

// localDockerHost is the local daemon's socket, from which ensureRemoteImage
// saves the node image (a variable for tests).
var localDockerHost = client.DefaultDockerHost

// imageCopyLimit bounds saving the image from one daemon and loading it
// into another.
const imageCopyLimit = 10 * time.Minute

// ensureRemoteImage makes sure the remote daemon has the node image: when a
// local daemon answers, the image is made current there (EnsureImage) and
// copied over (docker save | docker load) unless the remote daemon has the
// same image already; without a local daemon it is built on the remote one
// from the build context, through its API. The image must then carry
// toxiproxy-server and lockfault-nodectl, and be built for the daemon's
// platform (its binaries are the harness host's).
func ensureRemoteImage(ctx context.Context, remote client.APIClient) error {
	img := dockerImage()
	if local := localDocker(ctx); local != nil {
		defer local.Close()
		if err := ensureImageOn(ctx, local); err != nil {
			return err
		}
		li, err := local.ImageInspect(ctx, img)
		if err != nil {
			return fmt.Errorf("docker: inspect image %s on %s: %w", img, localDockerHost, err)
		}
		ri, err := remote.ImageInspect(ctx, img)
		if err != nil && !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("docker: inspect image %s on %s: %w", img, remote.DaemonHost(), err)
		}
		if err != nil || ri.ID != li.ID {
			if err := copyImage(ctx, local, remote, img); err != nil {
				return err
			}
		}
	} else if err := ensureImageOn(ctx, remote); err != nil {
		return err
	}
	return checkRemoteImage(ctx, remote, img)
}

// localDocker connects to the local daemon, or returns nil when none
// answers within 2 s.
func localDocker(ctx context.Context) *client.Client {
	cli, err := client.New(client.WithHost(localDockerHost), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{}); err != nil {
		cli.Close()
		return nil
	}
	return cli
}

// copyImage streams img from one daemon into another.
func copyImage(ctx context.Context, from, to client.APIClient, img string) error {
	ctx, cancel := context.WithTimeout(ctx, imageCopyLimit)
	defer cancel()
	fmt.Fprintf(os.Stderr, "docker: loading %s into %s (saved from %s)\n", img, to.DaemonHost(), from.DaemonHost())
	saved, err := from.ImageSave(ctx, []string{img})
	if err != nil {
		return fmt.Errorf("docker: save image %s from %s: %w", img, from.DaemonHost(), err)
	}
	defer saved.Close()
	loaded, err := to.ImageLoad(ctx, saved)
	if err != nil {
		return fmt.Errorf("docker: load image %s into %s: %w", img, to.DaemonHost(), err)
	}
	defer loaded.Close()
	// The daemon reports progress, and errors, as a JSON stream.
	out, err := io.ReadAll(io.LimitReader(loaded, 1<<20))
	if err != nil {
		return fmt.Errorf("docker: load image %s into %s: %w", img, to.DaemonHost(), err)
	}
	if bytes.Contains(out, []byte(`"errorDetail"`)) || bytes.Contains(out, []byte(`"error"`)) {
		return fmt.Errorf("docker: load image %s into %s: %s", img, to.DaemonHost(), bytes.TrimSpace(out))
	}
	return nil
}

// checkRemoteImage fails unless img on the remote daemon has what a remote
// run needs and runs on its platform.
func checkRemoteImage(ctx context.Context, remote client.APIClient, img string) error {
	ins, err := remote.ImageInspect(ctx, img)
	if err != nil {
		return fmt.Errorf("docker: inspect image %s on %s: %w", img, remote.DaemonHost(), err)
	}
	var labels map[string]string
	if ins.Config != nil {
		labels = ins.Config.Labels
	}
	if labels[labelImageToxiproxy] != "1" || labels[labelImageNodectl] != "1" {
		return fmt.Errorf("docker: image %s has no toxiproxy-server or lockfault-nodectl, which a remote daemon (%s) needs: install go, then run `LOCKFAULT_IMAGE_REBUILD=1 bash cluster/image/build.sh`", img, remote.DaemonHost())
	}
	v, err := remote.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return fmt.Errorf("docker: version of %s: %w", remote.DaemonHost(), err)
	}
	if v.Os != runtime.GOOS || v.Arch != runtime.GOARCH {
		return fmt.Errorf("docker: the daemon at %s runs %s/%s, but the node image holds this host's %s/%s binaries", remote.DaemonHost(), v.Os, v.Arch, runtime.GOOS, runtime.GOARCH)
	}
	return nil
}

// hostShimBuilt reports whether faults/clockshim/libclockshim.so exists
// under the module root.
func hostShimBuilt() bool {
	root, err := moduleRoot()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(root, "faults", "clockshim", "libclockshim.so"))
	return err == nil
}

func buildScript() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "cluster", "image", "build.sh")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("docker: image build script: %w", err)
	}
	return p, nil
}

// moduleRoot is the nearest directory at or above the working directory
// holding go.mod.
func moduleRoot() (string, error) {
	dirs := cluster.ShimDirs()
	if len(dirs) > 0 {
		d := dirs[len(dirs)-1]
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("cannot find the lockfault module root (go.mod) from the working directory")
}

func dockerImage() string {
	if s := os.Getenv("LOCKFAULT_IMAGE"); s != "" {
		return s
	}
	return DockerImage
}
