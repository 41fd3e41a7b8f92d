/** Construct ids derived from declared names, so a declaration's names fix their logical ids. */

/** `invoice.issue` → `InvoiceIssue`, `invoice-relay` → `InvoiceRelay`: a construct id (and so its logical ids). */
export function constructIdOf(name: string): string {
  return name
    .split(/[.-]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
