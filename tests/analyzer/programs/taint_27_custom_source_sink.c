// analysis: taint
// custom source and sink from taint.toml: read_secret's result, leak's argument 0
int read_secret(void);
void leak(int v);

static void report(int v) {
  leak(v); // expect: taint leak
}

int main(void) {
  int secret = read_secret();
  int masked = secret & 0xff;
  leak(masked); // expect: taint leak
  leak(42);
  int pub = 7;
  leak(pub);
  report(secret);
  return 0;
}
