# Builds the four shipped commands into one distroless image; the Helm
# chart runs /panorama (SQLite, all in one) or /controller-manager and
# /apiserver, and the agent's chart (charts/panorama-agent) runs /agent in
# members the hub cannot reach. Not cmd/panorama-demo: it links envtest and
# runs its own control planes, on a workstation (make run).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/ ./cmd/controller-manager ./cmd/apiserver ./cmd/panorama ./cmd/agent

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/panorama"]
