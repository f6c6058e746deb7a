import { VARIABLES } from '../../config/variables';
import { METRICS } from '../../vocabulary/metrics';
import { configurationFiles } from './configuration';
import type { Generated } from './markdown';
import { metricsFiles } from './metrics';

/** Every part of a file `npm run docs` writes, in order (one file may have several parts). */
export function generatedFiles(): Generated[] {
  return [...configurationFiles(VARIABLES), ...metricsFiles(METRICS)];
}
