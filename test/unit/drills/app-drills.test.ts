import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { appDrillInfos } from '../../../lib/drills/app-drills';
import { appDrillCatalog, DRILL_CATALOG } from '../../../lib/ops/drills/catalog';

const ROOT = path.join(__dirname, '..', '..', '..');

describe('Module: app-drills appDrillInfos', () => {
  it("when the app's cdk.json names its extensions, its own drills follow tenang's, with its defaults", () => {
    // Act: tenang's checkout names the reference app's extensions.
    const drills = appDrillInfos(ROOT);

    // Assess
    expect(drills.map((d) => d.name)).toEqual([
      ...DRILL_CATALOG.map((d) => d.name),
      'stuck-lock',
      'duplicates',
      'stale-cache',
      'stream-failures',
    ]);
    expect(drills.find((d) => d.name === 'dlq-not-empty')?.defaultJobType).toBe('payment.capture');
    expect(drills.find((d) => d.name === 'backlog')?.defaultJobType).toBe('notification.send');
    expect(drills.find((d) => d.name === 'stream-failures')?.consumers).toContain('outbox-relay');
  });

  it("when the app names no extensions, it has tenang's drills alone, without defaults", () => {
    // Prepare
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-app-'));
    fs.writeFileSync(path.join(dir, 'cdk.json'), JSON.stringify({ app: 'true' }));

    try {
      // Act
      const drills = appDrillInfos(dir);

      // Assess
      expect(drills).toEqual([...DRILL_CATALOG]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when an app's drill repeats a name of tenang's, or its defaults name a drill that takes no job type, the catalog says so", () => {
    const own = { name: 'stuck-lock', runbook: 'stuck-lock', incident: 'x', consumers: [] };
    expect(() => appDrillCatalog([{ ...own, name: 'backlog' }])).toThrow('two drills are named backlog');
    expect(() => appDrillCatalog([own], { 'stuck-lock': 'a.b' })).toThrow(
      'drillJobTypes names stuck-lock, which is not a drill that takes any job type',
    );
  });
});
