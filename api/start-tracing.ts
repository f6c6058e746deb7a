import { startTracingOrExit } from '../config/tracing';

// The API's first import (api/main.ts): tracing, when the OTEL_* variables ask for it, must be
// started before http, Koa and pg are loaded, or their calls would not be traced.
startTracingOrExit('api');
