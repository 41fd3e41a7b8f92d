/**
 * A scenario flow: the traffic of an app's own domain that the scenario runs beside the declared
 * job types' jobs (an app hands one in through its extensions, lib/local/extensions.ts).
 * Placeholder: its members are being defined as the reference's order flow moves out of the kit.
 */
export interface ScenarioFlow {
  /** The flow's name, in the scenario's report. */
  readonly name: string;
}
