"""Pure scheduling logic: kube-scheduler's framework, plugins and algorithm. No I/O here."""
