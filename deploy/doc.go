// Package deploy holds Taskloom's deployment files and no code: the
// container image (Dockerfile), Docker Compose with Prometheus
// (compose.yaml, prometheus.yml), Kubernetes manifests (kubernetes/), a
// Grafana dashboard of the Prometheus metrics (grafana/taskloom.json:
// import it, or provision it, and pick the Prometheus data source and
// the scrape job), a systemd unit and example configuration.
//
// # Kubernetes
//
// The Deployment is given every variable Compose gives its replicas:
// credentials from the Secret (kubernetes/secret.yaml), the other
// settings from the ConfigMap (kubernetes/configmap.yaml). To run it:
//
//  1. Build and push the image and name it in deployment.yaml and
//     migrate-job.yaml.
//  2. In the Secret: DATABASE_URL, and TASKLOOM_API_TOKEN of at least 32
//     characters (openssl rand -hex 32); optionally OPENAI_API_KEY,
//     DISCORD_BOT_TOKEN, SLACK_BOT_TOKEN, SLACK_APP_TOKEN,
//     SLACK_SIGNING_SECRET. An unchanged Secret is refused at start-up.
//  3. In the ConfigMap: TASKLOOM_PUBLIC_URL, the URL people open (the
//     Ingress's). The API answers only to localhost, the pod's own
//     address and name, and this URL's host: until it is set, reach the
//     service with kubectl port-forward service/taskloom 8080:80, and an
//     Ingress's host gets 421. Optionally OPENAI_BASE_URL (ending in /v1),
//     OPENAI_MODEL, DISCORD_APPLICATION_ID, TASKLOOM_ADMINS.
//  4. Apply the Secret and the ConfigMap, run the migration Job, then
//     apply the Deployment, the Service and the PodDisruptionBudget.
//  5. After changing the ConfigMap or the Secret, kubectl rollout restart
//     deployment/taskloom: a pod reads its environment when it starts.
//
// # Tests
//
// No container runtime runs where the tests do, so the tests read each
// file instead — the YAML with a real YAML parser, the Dockerfile
// instruction by instruction — and hold it to the binary it deploys: a
// probe's path is a route the server mounts (and answers when it runs),
// ports agree with TASKLOOM_HTTP_ADDR, a container's command is one that
// taskloom accepts with the environment the file gives it, every variable
// a file gives taskloom is one it reads (config.Vars), the Deployment
// takes what Compose passes, the Dockerfile passes VERSION and REVISION
// to `taskloom version`, the dashboard queries only series taskloom
// exports (internal/metrics) and every one of its own, the replicas,
// selectors, scrape targets and security settings are what the deploy
// guide promises.
// TestChecksCatchBrokenFiles breaks the files on purpose and expects each
// break to be reported.
package deploy
