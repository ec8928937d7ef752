// Package deploy holds no code: its tests check what deploys the platform
// against the code it deploys. They build every Kubernetes overlay under
// k8s/ with kustomize's Go API, decode each object strictly into its
// Kubernetes API type, and hold the rules of docs/deploy.md (probes,
// resources, a PodDisruptionBudget and a HorizontalPodAutoscaler per
// Deployment, headless gRPC Services, images, ports and variables that the
// services' code reads); and they check every place that names the
// platform's services (go.work, docker-compose, the databases, the README)
// against the one list, pkg/devstack's Services.
package deploy
