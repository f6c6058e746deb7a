import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { TLSConfig } from '@temporalio/common/lib/internal-non-workflow';
import type { NativeConnectionOptions } from '@temporalio/worker';
import type { Reader } from './reader';
import type { WorkerDeploymentVersion } from '@temporalio/common';

// Where Temporal is and how to authenticate to it, read the way every Temporal SDK and the CLI read
// it (`@temporalio/envconfig`): a profile of a TOML file (TEMPORAL_CONFIG_FILE, else
// ~/.config/temporalio/temporal.toml; TEMPORAL_PROFILE, else `default`), overridden by the
// TEMPORAL_* variables (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS,
// TEMPORAL_TLS_CLIENT_CERT_PATH, …). Temporal Cloud is an address, a namespace and an API key (or a
// client certificate); TLS is on as soon as an API key or a TLS setting is given.

export interface TemporalSettings {
  address: string;
  namespace: string;
  /** `true` (system roots), a TLSConfig (certificates, server name), or unset/false: plaintext. */
  tls?: TLSConfig | boolean;
  apiKey?: string;
  /** gRPC metadata sent on every call (`grpc_meta` of the profile, TEMPORAL_GRPC_META_*). */
  metadata?: NativeConnectionOptions['metadata'];
}

const DEFAULT_ADDRESS = '127.0.0.1:7233';
const DEFAULT_NAMESPACE = 'default';

/** The connection settings of this environment; a broken profile is a problem, not a crash. */
export function loadTemporalSettings(env: Record<string, string | undefined>, problems: string[]): TemporalSettings {
  // An empty variable means unset here, as for every other setting (envconfig would take '' as a value).
  const set = Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''),
  );
  // The SDK's reader takes any other spelling (TRUE, yes, on) as false: TLS off, its files ignored.
  if (set.TEMPORAL_TLS !== undefined && !['true', 'false'].includes(set.TEMPORAL_TLS)) {
    problems.push(`TEMPORAL_TLS must be true or false, got "${set.TEMPORAL_TLS}"`);
  }
  try {
    const { connectionOptions: c, namespace } = loadClientConnectConfig({ overrideEnvVars: set });
    return {
      address: c.address || DEFAULT_ADDRESS,
      namespace: namespace || DEFAULT_NAMESPACE,
      ...(c.tls ? { tls: c.tls } : {}),
      ...(c.apiKey ? { apiKey: c.apiKey } : {}),
      ...(c.metadata && Object.keys(c.metadata).length ? { metadata: c.metadata } : {}),
    };
  } catch (err) {
    const file = set.TEMPORAL_CONFIG_FILE ? ` (TEMPORAL_CONFIG_FILE=${set.TEMPORAL_CONFIG_FILE})` : '';
    problems.push(`the Temporal client profile could not be read${file}: ${(err as Error).message}`);
    return { address: set.TEMPORAL_ADDRESS || DEFAULT_ADDRESS, namespace: set.TEMPORAL_NAMESPACE || DEFAULT_NAMESPACE };
  }
}

/** How the settings authenticate, for a start-up line (never the key itself). */
export function describeTemporal(s: TemporalSettings): string {
  const how = s.apiKey
    ? 'TLS, API key'
    : s.tls
      ? typeof s.tls === 'object' && s.tls.clientCertPair
        ? 'mTLS'
        : 'TLS'
      : 'plaintext';
  return `${s.address} (namespace ${s.namespace}, ${how})`;
}

/** A Temporal Worker Deployment's version: the deployment's name and this build's id. */
export type { WorkerDeploymentVersion };

/** WORKER_DEPLOYMENT_NAME and WORKER_BUILD_ID: both or neither. */
export function workerDeployment(r: Reader): WorkerDeploymentVersion | undefined {
  const deploymentName = r.raw('WORKER_DEPLOYMENT_NAME');
  const buildId = r.raw('WORKER_BUILD_ID');
  if (!deploymentName && !buildId) return undefined;
  if (!deploymentName || !buildId) {
    r.problems.push(
      'WORKER_DEPLOYMENT_NAME and WORKER_BUILD_ID go together: set both for Worker Versioning, or neither',
    );
    return undefined;
  }
  return { deploymentName, buildId };
}
