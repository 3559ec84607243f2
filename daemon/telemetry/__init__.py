"""Usage telemetry (seeds/000, "Workflow telemetry", "Usage metrics"): the usage log, the
phases of the call in progress, and the counters a call's terminal event carries. The
format is `vigil.protocol.usage`; `vigil report` reads it back."""
