import fs from 'node:fs';
import path from 'node:path';
import { generatedFiles } from './files';

// `npm run docs`: writes the documentation generated from the code's tables (config/variables,
// vocabulary/metrics.ts). The fast tier's drift test fails when a file is not what this would write.

const root = path.resolve(__dirname, '../..');
for (const { file, render } of generatedFiles()) {
  const full = path.join(root, file);
  const before = fs.existsSync(full) ? fs.readFileSync(full, 'utf8') : '';
  const after = render(before);
  if (after === before) console.log(`${file}: up to date`);
  else {
    fs.writeFileSync(full, after);
    console.log(`${file}: written`);
  }
}
