/**
 * One process of the multi-process stampede (a stand-in for one Lambda instance group): reads
 * its arguments as JSON from argv, runs measureStampede, prints the result as JSON.
 */
import { measureStampede, type StampedeOptions } from '../harness/stampede';

const options = JSON.parse(process.argv[2] ?? '{}') as StampedeOptions;
measureStampede(options).then(
  (result) => {
    process.stdout.write(JSON.stringify(result));
    process.exit(0);
  },
  (error: unknown) => {
    process.stderr.write(String(error));
    process.exit(1);
  },
);
