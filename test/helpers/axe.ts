import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const axePath = createRequire(__filename).resolve('axe-core/axe.min.js');

/**
 * axe-core's critical and serious violations on the page as it is now, as "rule: target" lines
 * (empty: none). The page needs JavaScript on (axe is a script): a page's states with JavaScript off
 * are the same markup but for the <noscript> reload, which axe's meta-refresh rule would flag.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: axePath });
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, o: object) => Promise<{ violations: any[] }> } })
      .axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.map((v) => ({
      id: v.id as string,
      impact: v.impact as string,
      targets: (v.nodes as { target: string[] }[]).map((n) => n.target.join(' ')),
    }));
  });
  return violations
    .filter((v) => v.impact === 'critical' || v.impact === 'serious')
    .map((v) => `${v.id}: ${v.targets.join(', ')}`);
}
