package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	cerrdefs "github.com/containerd/errdefs"
)

// DockerImage is the node image built offline by cluster/image/build.sh
// (see EnsureImage). LOCKFAULT_IMAGE overrides it, for the script too.
const DockerImage = "lockfault-node:7.0.15"

// EnsureImage builds the node image with cluster/image/build.sh (found from
// the module root) when it is missing, or when the clock shim has been built
// since the image was. The script's output goes to stderr.
func EnsureImage(ctx context.Context) error {
	cli, err := dockerClient(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	img := dockerImage()
	ins, err := cli.ImageInspect(ctx, img)
	switch {
	case err == nil:
		hasShim := ins.Config != nil && ins.Config.Labels[labelImageShim] == "1"
		if hasShim || !hostShimBuilt() {
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
	cmd.Env = append(os.Environ(), "LOCKFAULT_IMAGE="+img)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("docker: build image %s with %s: %w", img, script, err)
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
	dirs := shimDirs()
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
