import { describe, expect, it } from "vitest";
import { dependencyOf } from "./dependency.js";

describe("dependencyOf", () => {
  it("names a dependency by explicit key, else host and port", () => {
    expect(dependencyOf("https://api.example.com/x", null)).toBe("api.example.com");
    expect(dependencyOf("https://api.example.com:443/x", null)).toBe("api.example.com");
    expect(dependencyOf("http://127.0.0.1:8080/x", undefined)).toBe("127.0.0.1:8080");
    expect(dependencyOf("http://127.0.0.1:8080/x", "payments")).toBe("payments");
  });
});
