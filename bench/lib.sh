# Shared by the benchmark scripts (sourced, not run).

# The median of hyperfine's JSON export, in milliseconds to 3 decimals.
median_ms() { # file, index of the command
	jq -r ".results[$2].median * 1000 | . * 1000 | round / 1000" "$1"
}

# a / b to 2 decimals.
ratio() {
	echo "scale=2; $1 / $2" | bc
}
