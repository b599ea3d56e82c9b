package docker

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lockfault/lockfault/cluster"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// dockerCaps is what the daemon and the node image allow, read once by
// NewDocker.
type dockerCaps struct {
	imageShim bool   // the image holds the clock shim
	kernel    string // the daemon host's kernel release
	rootless  bool   // the daemon runs rootless
	cgroupV1  bool   // ... on cgroup v1: it cannot pause containers
}

// Supports is nil when the Docker backend can inject fault on this daemon
// with this image, or says why not:
//   - the shim's faults need the shim in the image;
//   - beside a local daemon they also need the nodes on the harness's
//     kernel (the harness maps the node's clock file, and finds the node's
//     processes in its own /proc): a daemon in a VM (Docker Desktop) is not,
//     and needs the remote design (LOCKFAULT_DOCKER_REMOTE=1);
//   - with a remote daemon, power-loss freezes the node's container (docker
//     pause), which a rootless daemon on cgroup v1 cannot do.
//
// Every other fault works the same beside a local or a remote daemon.
func (d *Docker) Supports(fault string) error {
	if !slices.Contains(cluster.ShimFaults, fault) {
		return nil
	}
	if !d.caps.imageShim {
		return fmt.Errorf("fault %s needs the node shim in the image %s, which was built without it: run `make shim`, then `LOCKFAULT_IMAGE_REBUILD=1 bash cluster/image/build.sh`", fault, d.image)
	}
	if d.remote == nil {
		if own := hostKernel(); d.caps.kernel != own {
			return fmt.Errorf("fault %s: the Docker daemon's nodes run on another kernel (%s, the harness's is %s: a VM?), where the harness cannot move their clocks or freeze their processes; set %s=1 to drive the shim from inside the containers", fault, d.caps.kernel, own, envRemote)
		}
		return nil
	}
	if fault == "power-loss" && d.caps.rootless && d.caps.cgroupV1 {
		return fmt.Errorf("fault %s: the Docker daemon on %s is rootless on cgroup v1 and cannot pause a container, which a power loss needs to stop the node with every process it forked at once", fault, d.remote.host)
	}
	return nil
}

// readCaps reads d.caps from the daemon.
func (d *Docker) readCaps(ctx context.Context) error {
	res, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return fmt.Errorf("docker: info: %w", err)
	}
	info := res.Info
	img, err := d.cli.ImageInspect(ctx, d.image)
	if err != nil {
		return fmt.Errorf("docker: inspect image %s: %w", d.image, err)
	}
	var imageLabels map[string]string
	if img.Config != nil {
		imageLabels = img.Config.Labels
	}
	d.caps = dockerCaps{
		imageShim: imageLabels[labelImageShim] == "1",
		kernel:    info.KernelVersion,
		cgroupV1:  info.CgroupVersion == "1",
	}
	for _, o := range info.SecurityOptions {
		if strings.Contains(o, "name=rootless") {
			d.caps.rootless = true
		}
	}
	return nil
}

// hostKernel is the harness's kernel release (uname -r).
func hostKernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
