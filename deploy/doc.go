// Package deploy holds Taskloom's deployment files and no code: the
// container image (Dockerfile), Docker Compose with Prometheus
// (compose.yaml, prometheus.yml), Kubernetes manifests (kubernetes/), a
// systemd unit and example configuration.
//
// No container runtime runs where the tests do, so the tests read each
// file instead — the YAML with a real YAML parser, the Dockerfile
// instruction by instruction — and hold it to the binary it deploys: a
// probe's path is a route the server mounts (and answers when it runs),
// ports agree with TASKLOOM_HTTP_ADDR, a container's command is one that
// taskloom accepts with the environment the file gives it, the replicas,
// selectors, scrape targets and security settings are what README.md
// promises. TestChecksCatchBrokenFiles breaks the files on purpose and
// expects each break to be reported.
package deploy
