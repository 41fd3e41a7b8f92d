/**
 * The drills of one app: tenang's (they hold for any job type) and the app's own, which its
 * extensions module brings (cdk.json's `tenang:extensions`, lib/local/extensions.ts). `tenang
 * drill`, the config audit's P2 rule and the runbook index read the same list. Light: tenang's
 * drills' code is not loaded here (index.ts appDrills has it).
 */
import { loadAppExtensions } from '../local/extensions';
import { findAppDirectory } from '../local/project';
import { appDrillCatalog, type AppDrillInfo, type DrillInfo } from '../ops/drills/catalog';

/** A drill's catalog fields alone (what the audit and the index read), without its code. */
function infoOf(d: DrillInfo): DrillInfo {
  return {
    name: d.name,
    runbook: d.runbook,
    incident: d.incident,
    consumers: d.consumers,
    ...(d.timeoutSeconds === undefined ? {} : { timeoutSeconds: d.timeoutSeconds }),
    ...(d.anyJobType === undefined ? {} : { anyJobType: d.anyJobType }),
  };
}

/**
 * The catalog of the app in `appDir`: tenang's drills, then the app's own, each drill that takes
 * any job type with the default the app names for it. @default appDir: no app, tenang's alone
 */
export function appDrillInfos(appDir: string | undefined): AppDrillInfo[] {
  const extensions = loadAppExtensions(appDir);
  return appDrillCatalog((extensions.drills ?? []).map(infoOf), extensions.drillJobTypes);
}

/** The catalog of the app at or above `dir` (its nearest cdk.json; none: tenang's drills alone). */
export function drillsOfAppAt(dir: string): AppDrillInfo[] {
  return appDrillInfos(findAppDirectory(dir));
}
