# The Flotilla manager image: `make docker-build IMG=...`.
# The binary is built exactly as `make build` builds bin/manager, statically, and runs on
# distroless as the unprivileged user 65532.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Dependencies first, so that they stay cached while only the sources change.
COPY go.mod go.sum ./
RUN go mod download

COPY main.go main.go
COPY api/ api/
COPY controllers/ controllers/
COPY internal/ internal/

# TARGETOS and TARGETARCH are set by `docker buildx build --platform`; a plain build targets
# the builder's platform.
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -o manager .

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/manager .
USER 65532:65532

ENTRYPOINT ["/manager"]
