//! A real Prometheus on loopback and promtool (filled by the dashboard tests).
