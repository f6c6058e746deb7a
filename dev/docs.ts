import fs from 'node:fs';
import path from 'node:path';
import { VARIABLES } from '../config/variables';
import { generatedFiles } from '../config/variables/render';

// `npm run docs`: writes the files generated from the configuration table (config/variables). The
// fast tier's drift test fails when one of them is not what this would write.

const root = path.resolve(__dirname, '..');
for (const { file, render } of generatedFiles(VARIABLES)) {
  const full = path.join(root, file);
  const before = fs.existsSync(full) ? fs.readFileSync(full, 'utf8') : '';
  const after = render(before);
  if (after === before) console.log(`${file}: up to date`);
  else {
    fs.writeFileSync(full, after);
    console.log(`${file}: written`);
  }
}
