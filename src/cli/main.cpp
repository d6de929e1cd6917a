// Placeholder: the real CLI lands with the trainer.
int main() { return 0; }
