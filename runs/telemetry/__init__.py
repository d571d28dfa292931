"""What the site tells an operator's monitoring: metrics at /metrics in Prometheus' format
(`metrics`, `collector`, `views`) and traces over OpenTelemetry (`tracing`)."""
