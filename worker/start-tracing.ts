import { startTracingOrExit } from '../config/tracing';

// The worker's first import (worker/main.ts): tracing, when the OTEL_* variables ask for it, must
// be started before http and pg are loaded, or their calls would not be traced.
startTracingOrExit('worker');
