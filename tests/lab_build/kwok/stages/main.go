// Command kwok-stages prints the default Stages that kwokctl gives kwok (a fast node initialisation,
// node heartbeats with a lease, pods Ready, completed and deleted), as one kwok configuration file, from
// the embedded copies in the pinned sigs.k8s.io/kwok module: the kwok binary alone starts with no Stage
// ("no stages found"), and the lab's scale rehearsal runs kwok without kwokctl.
package main

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	heartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	stages := []string{
		nodefast.DefaultNodeInit,
		heartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, stage := range stages {
		if i > 0 {
			fmt.Println("---")
		}
		fmt.Println(strings.TrimSpace(stage))
	}
}
