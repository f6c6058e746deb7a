import { isExecutable, toolCacheDir, which } from '../../../dev/tools';
import path from 'node:path';

/**
 * How to build the kustomization in `dir`: `kubectl kustomize`, else the standalone `kustomize build`
 * (on PATH or in the tool cache, where .ci/run puts it when the machine has neither).
 */
export function kustomizeCommand(dir: string): [string, string[]] | undefined {
  if (which('kubectl')) return ['kubectl', ['kustomize', dir]];
  const kustomize = which('kustomize') ?? path.join(toolCacheDir(), 'kustomize');
  return isExecutable(kustomize) ? [kustomize, ['build', dir]] : undefined;
}
