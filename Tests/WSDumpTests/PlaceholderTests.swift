import Testing

@Test func wsdumpPlaceholder() {
    #expect(true)
}
