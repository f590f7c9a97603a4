import { ZxcvbnFactory } from "@zxcvbn-ts/core";
import { adjacencyGraphs, dictionary } from "@zxcvbn-ts/language-common";
import { AppError } from "@tick/core";

/**
 * The server's half of the password policy, for every password someone sets (sign-up, a new account from an
 * invitation, a password change); the contract's passwordSchema holds the other half (12 to 200 characters,
 * not only spaces), checked wherever a request is parsed. This half needs zxcvbn's list of about 49,000
 * common passwords (@zxcvbn-ts/language-common, shipped in the package: nothing is fetched at run time),
 * too large for the browser bundle that includes the contract.
 *
 * A password is refused when zxcvbn estimates it falls within 10^8 guesses (its score below 3): every
 * password of the list, and what is close to one (a common password with digits added, a keyboard walk, a
 * repeated or sequential run, a word with a few letters swapped for digits), and passwords built from the
 * person's own email or tenant name.
 */
const MIN_SCORE = 3;
// zxcvbn reads at most this many characters: its cost grows with the length, and a password whose first
// 64 characters are hard to guess is hard to guess.
const MAX_CHECKED_LENGTH = 64;

let checker: ZxcvbnFactory | undefined;

// Built on first use (it unpacks the list, ~25 ms), then shared.
const zxcvbn = () => (checker ??= new ZxcvbnFactory({ dictionary, graphs: adjacencyGraphs, maxLength: MAX_CHECKED_LENGTH }));

const HINTS: Record<string, string> = {
  commonPasswords: "it is one of the most common passwords",
  similarToCommon: "it is a common password, or close to one",
  topTen: "it is one of the ten most common passwords",
  topHundred: "it is one of the hundred most common passwords",
  simpleRepeat: "it repeats a character",
  extendedRepeat: "it repeats a short pattern",
  sequences: "it is a sequence such as abcd or 1234",
  straightRow: "it is a row of keys",
  keyPattern: "it is a pattern on the keyboard",
  userInputs: "it is built from your email or your team's name",
  dates: "it is mostly a date",
  recentYears: "it is mostly a year",
};

/**
 * Why this password is refused, or null when it is accepted. `related` are the words of the request that the
 * password must not be built from (the email, the tenant's name and slug).
 */
function passwordPolicyProblem(password: string, related: readonly string[] = []): string | null {
  const result = zxcvbn().check(password, related.filter(Boolean).map((s) => s.toLowerCase()));
  if (result.score >= MIN_SCORE) return null;
  const hint = result.feedback.warning ? HINTS[result.feedback.warning] : undefined;
  return `too easy to guess${hint ? `: ${hint}` : ""}. Use a longer passphrase of unrelated words`;
}

/**
 * Throws 422 validation_failed naming the field (as the contract's own password errors do) when the password
 * may not be set. Call it wherever a password is set, before it is hashed.
 */
export function enforcePasswordPolicy(password: string, related: readonly string[] = [], field = "password"): void {
  const problem = passwordPolicyProblem(password, related);
  if (problem) {
    throw new AppError("validation_failed", `The password is ${problem}.`, { extra: { errors: [{ path: field, message: problem }] } });
  }
}
